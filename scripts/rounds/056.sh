# round 56: issue 32, session 19: GOTHIC's M31 model with block steps: 2^20 for 1 Gyr (the disk's stability), 2^23 for 125 Myr
py m31_20_1gyr 320 scripts/bench/galaxy.py configs/galaxy_m31.toml --n 1048576 --t-end 212.0 --device nvidia \
    --out /tmp/m31_20 --json "$D/m31_20_1gyr.json"
py m31_23_long 220 scripts/bench/galaxy.py configs/galaxy_m31.toml --n 8388608 --t-end 26.5 --device nvidia \
    --out /tmp/m31_23l --json "$D/m31_23_125myr.json"
