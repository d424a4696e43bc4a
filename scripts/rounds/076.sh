# round 76: issue 30, session 22, final code (7 trials per pass of the Lagrangian radii): whole runs with jz-fmm
jz_wheels
py runs_default 300 scripts/bench/step.py runs --device nvidia --n 4194304 16777216 --schemes plain-mono --steps 32 \
    --diag-every 8 --peer --json "$D/runs_default.json"
