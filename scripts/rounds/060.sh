# round 60: issue 32, session 20: GOTHIC's M31 model at 2^23 for 1 Gyr (t = 212) in slices, one call each on the warm machine:
# bash scripts/gpu_round.sh 60 T [new]: the run in .device/m31_23_1gyr (git-ignored: kept between calls while the machine
# stays warm) up to t = T ('new': started afresh; else continued: an error if the folder is gone); a slice stops itself after
# WALL_LIMIT s (default 540; a restart point) to be continued; the call that reaches 212 writes the report and deletes the snapshots
M=$PWD/.device/m31_23_1gyr; T=${2:-212.0}
if [ "${3:-}" = new ]; then RES=; else RES=--resume; fi
py m31_23_1gyr_to_$T 580 scripts/bench/galaxy.py configs/galaxy_m31.toml --n 8388608 --t-end 212.0 --device nvidia \
    --snapshot-dt 53.0 --slice-to "$T" $RES --wall-limit "${WALL_LIMIT:-540}" --out "$M" --json "$D/m31_23_1gyr.json"
cp "$M"/diagnostics.csv "$M"/diagnostics_types.csv "$M"/timebins.csv "$M"/run.log "$M"/galaxy_slices.json "$O/" 2>/dev/null
[ -e "$D/m31_23_1gyr.json" ] && cp "$D/m31_23_1gyr.json" "$O/" && rm -f "$M"/*.hdf5
(ls -la "$M"; df -h "$M") > "$O/m31_folder.txt" 2>&1
cat "$O/index.txt"; tail -c 1500 "$D/m31_23_1gyr_to_$T.txt"
