# round 75: issue 30, session 22, final code: Lagrangian radii from (radius, mass) computed once, against the trials per pass
# (radii.py); per kernel at 2^22 and 2^24; whole runs with jz-fmm
jz_wheels
py radii 120 scripts/tune/radii.py --device nvidia --n 4194304 16777216 --trials 3 7 15
py kernels 120 scripts/tune/kernels.py --device nvidia --n 4194304 16777216 --steps 8 --json "$D/kernels.json"
py runs_default 300 scripts/bench/step.py runs --device nvidia --n 4194304 16777216 --schemes plain-mono --steps 32 \
    --diag-every 8 --peer --json "$D/runs_default.json"
