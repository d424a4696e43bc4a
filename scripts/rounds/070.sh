# round 70: issue 30, session 22: results enqueued back before the list sizes are read, Lagrangian radii on the device with one
# read, builds without timing waits: per-kernel times and whole runs with jz-fmm at 2^22 and 2^24
jz_wheels
py kernels 120 scripts/tune/kernels.py --device nvidia --n 4194304 16777216 --steps 8 --json "$D/kernels.json"
py runs_default 300 scripts/bench/step.py runs --device nvidia --n 4194304 16777216 --schemes plain-mono --steps 32 \
    --diag-every 8 --peer --json "$D/runs_default.json"
