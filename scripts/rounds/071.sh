# round 71: issue 30, session 22, final code: round 70's changes plus the longest list found on the device (4 bytes read) and
# the extent reduced on the device (48 bytes read): per-kernel times, whole runs with jz-fmm, the cosmological sphere
jz_wheels
py kernels 120 scripts/tune/kernels.py --device nvidia --n 4194304 16777216 --steps 8 --json "$D/kernels.json"
py runs_default 300 scripts/bench/step.py runs --device nvidia --n 4194304 16777216 --schemes plain-mono --steps 32 \
    --diag-every 8 --peer --json "$D/runs_default.json"
py cosmo_sphere 400 scripts/bench/cosmo.py configs/cosmo_sphere.toml --device nvidia --out /tmp/cs --json "$D/cosmo_sphere.json"
