# round 68: issue 30, session 21, final code: results back to the caller's order as a gather (sort_back64); per-kernel times and whole runs with jz-fmm
jz_wheels
py kernels 120 scripts/tune/kernels.py --device nvidia --n 4194304 16777216 --steps 8 --json "$D/kernels.json"
py runs_default 300 scripts/bench/step.py runs --device nvidia --n 4194304 16777216 --schemes plain-mono --steps 32 \
    --diag-every 8 --peer --json "$D/runs_default.json"
