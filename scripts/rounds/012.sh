# round 12: session 6: buffered list writes (LBUF), copies of small groups (REPLICATE), 4 MB chunks; memory
HYBRIDTREE_DEVICE=nvidia py pytest_gpu 120 -m pytest -q -x -p no:cacheprovider tests/gravity/test_treewalk.py \
    tests/device/test_transfer.py -k "list_walk or buffered or copies or release or round_trip"
py tune_walk 200 scripts/tune/walk.py --device nvidia --n 1048576 4194304 16777216 --kernels walk_lists \
    --n-group 128 256 --sinks 2 --profile --variants LBUF=0,REPLICATE=1 LBUF=8,REPLICATE=1 \
    LBUF=16,REPLICATE=1 LBUF=8,REPLICATE=2 LBUF=8,REPLICATE=4 LBUF=8,REPLICATE=8
py memory 250 scripts/bench/memory.py --device nvidia --n 67108864 134217728 201326592 268435456 \
    --timeout 120 --json "$D/memory.json"
