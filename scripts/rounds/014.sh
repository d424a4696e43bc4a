# round 14: session 6: explicit fma in the opening test; the issue 6 table in one run
HYBRIDTREE_DEVICE=nvidia py pytest_gpu 50 -m pytest -q -x -p no:cacheprovider tests/gravity/test_treewalk.py \
    -k "list_walk or buffered or copies or both_walk"
py bench_gpu 520 scripts/bench/force.py --targets --device nvidia --cpu-device cpu --peer-cuda --json "$D/bench_gpu.json"
