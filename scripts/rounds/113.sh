# round 113: issue 30, session 29, final code: the suite's GPU tests, whole runs with jz-fmm at 2^22 and 2^24
HYBRIDTREE_DEVICE=nvidia py pytest_gpu 400 -m pytest -q -m gpu -p no:cacheprovider --tb=short
jz_wheels
py runs 180 scripts/bench/step.py runs --device nvidia --n 4194304 16777216 --schemes plain-mono --steps 32 \
    --diag-every 8 --peer --json "$D/runs.json"
