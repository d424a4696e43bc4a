# round 57: issue 32, session 19: round 56's 2^20 M31 for 1 Gyr again, alone (it took more than 320 s there); its logs kept
py m31_20_1gyr 560 scripts/bench/galaxy.py configs/galaxy_m31.toml --n 1048576 --t-end 212.0 --device nvidia \
    --out "$D/m31_20" --json "$D/m31_20_1gyr.json"
rm -f "$D"/m31_20/*.hdf5
