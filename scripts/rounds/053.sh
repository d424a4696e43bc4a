# round 53: issue 31, session 19: GADGET-4 64^3 (relative criterion, ErrTolForceAcc 0.005) on the machine's 16 CPU cores, continued over
# calls (gadget4/device_run.sh, .device/g4pkg from gadget4/pack_device.sh); on the first call hybridtree runs GADGET-4's ICs on the GPU
# meanwhile; once GADGET-4 is done: P(k) of its snapshots, the displacement shells, its snapshots (without Potential) back
G4W=$PWD/.device/g4work; ICS=$G4W/run64/ics/snapshot_ics_000.hdf5
( OPENING=relative ERRTOL=0.005 bash scripts/gadget4/device_run.sh 64 "$G4W" 16 "${G4_SECONDS:-580}" > "$O/g4.txt" 2>&1 ) &
G4PID=$!
for i in $(seq 90); do [ -s "$ICS" ] && break; sleep 2; done
if [ ! -e "$G4W/hybridtree_done" ]; then
  lscpu > "$D/lscpu.txt" 2>&1
  run_ht() { local name=$1 steps=$2; shift 2; echo "== ht_$name" >> "$O/index.txt"; local t0=$(date +%s)
    timeout 150 bash scripts/gadget4/compare_hybridtree.sh "$ICS" - "$G4W/ht_$name" "$steps" nvidia "$@" > "$D/ht_$name.txt" 2>&1
    echo "   rc=$? $(( $(date +%s) - t0 )) s" >> "$O/index.txt"; }
  run_ht 512 512
  run_ht 1024 1024
  run_ht 512_spline 512 --set gravity.softening=spline
  run_ht 512_relative 512 --set gravity.opening=relative
  run_ht 2048_spline 2048 --set gravity.softening=spline
  touch "$G4W/hybridtree_done"
fi
wait $G4PID
cp -r "$G4W"/ht_* "$D/" 2>/dev/null; rm -f "$D"/ht_*/run/*.hdf5
if [ -e "$G4W/run64/output/snapshot_003.hdf5" ]; then
  G=$G4W/run64/output
  for k in 1 2 3; do py pk_g4_$k 60 -m hybridtree pk "$G/snapshot_00$k.hdf5" --mesh 128 --out "$D/pk_gadget4_$k.txt"; done
  for v in "$G4W"/ht_*; do py shells_$(basename "$v") 120 scripts/gadget4/displacement_shells.py "$ICS" "$G" "$v/run"; done
  cp -r "$G/powerspecs" "$G/cpu.txt" "$G/timings.txt" "$G/fof_tab_003.hdf5" "$G4W/run64/param.txt" "$G4W/run64/walltime.txt" "$D/" 2>/dev/null
  for k in 0 2 3; do python - "$G/snapshot_00$k.hdf5" "$O/g4_snapshot_00$k.hdf5" <<'PY'
import sys, h5py
with h5py.File(sys.argv[1]) as f, h5py.File(sys.argv[2], "w") as g:
    for name in f:
        if name != "PartType1":
            f.copy(name, g)
    for a, v in f.attrs.items():
        g.attrs[a] = v
    p = g.create_group("PartType1")
    for name in ("Coordinates", "Velocities", "ParticleIDs"):
        f.copy(f"PartType1/{name}", p)
PY
  done
fi
grep -h "Sync-Point" "$G4W/run64/log.txt" | tail -1 >> "$O/index.txt"
