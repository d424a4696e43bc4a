# round 105: issue 30, session 28: groups packed with PACK_UNION (no box around a dense sibling): the cusp's 2^20 walk in groups of
# 128 and 256 (round 102: one group of 256 had a list of 173 000 entries), whole runs at 2^22 and 2^24, the build's tests
py relative 120 scripts/tune/relative.py --device nvidia --n 1048576 4194304 --theta 0.5 --alpha 0.003 --n-group 128 256
HYBRIDTREE_DEVICE=nvidia py tests_gpu 200 -m pytest -q -p no:cacheprovider tests/gravity/test_device_build.py \
    tests/gravity/test_treewalk.py tests/gravity/test_opening.py tests/gravity/test_refit.py
py runs 200 scripts/bench/step.py runs --device nvidia --n 4194304 16777216 --schemes plain-mono --steps 32 \
    --diag-every 8 --json "$D/runs.json"
