# round 66: issue 30, session 21: launches typed and cached, no per-force reads of counts and net force, kept buffers grown with headroom:
# the sort's tunings again, then whole runs at 2^22 and 2^24 (defaults and geometric theta = 0.5) with jz-fmm in the same round
jz_wheels
py sort 120 scripts/tune/sort.py --device nvidia --n 1048576 4194304 16777216 --tuning 256,16,8,4 128,32,8,7 256,8,8,5 128,16,8,6
py kernels 120 scripts/tune/kernels.py --device nvidia --n 4194304 16777216 --steps 8 --json "$D/kernels.json"
py runs_default 300 scripts/bench/step.py runs --device nvidia --n 4194304 16777216 --schemes plain-mono --steps 32 \
    --diag-every 8 --peer --json "$D/runs_default.json"
py runs_geo 200 scripts/bench/step.py runs --device nvidia --n 4194304 16777216 --schemes plain-mono --steps 32 \
    --diag-every 8 --set gravity.opening='"geometric"' --json "$D/runs_geo.json"
