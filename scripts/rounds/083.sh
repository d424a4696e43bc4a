# round 83: issue 30, session 25: cells_at searching near i (count_cells, fill_cells), the leaves' boxes in parallel (pack_leaves),
# alpha = 0.003 the default: the build's GPU tests, per kernel, whole runs with jz-fmm, sort tunings on Morton keys,
# block against shared steps on the cusp at 2^22
HYBRIDTREE_DEVICE=nvidia py tests_build 150 -m pytest -q -x -p no:cacheprovider tests/gravity/test_device_build.py \
    tests/gravity/test_refit.py tests/gravity/test_device_sort.py
jz_wheels
py kernels 90 scripts/tune/kernels.py --device nvidia --n 4194304 16777216 --steps 8 --json "$D/kernels.json"
py runs_default 200 scripts/bench/step.py runs --device nvidia --n 4194304 16777216 --schemes plain-mono --steps 32 \
    --diag-every 8 --peer --json "$D/runs_default.json"
py sort 60 scripts/tune/sort.py --device nvidia --n 4194304 16777216 --keys plummer --repeat 5 \
    --tuning 256,16,8,4 256,16,8,5 256,8,8,5 256,8,8,6 128,16,8,6 128,32,8,6 128,16,8,7
[ $(( $(date +%s) - T0 )) -lt 420 ] && py steps_4m 170 scripts/bench/timesteps.py steps --device nvidia --n 4194304 \
    --dt 0.5 --t-end 1.0 --eta 0.2 --shared-from 5 --refit-fraction 0 --json "$D/steps_4m.json"
