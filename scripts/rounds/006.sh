# round 6: session 5: sinks per work-item (direct NI, list-walk SINKS), pinned staging (issue 6)
HYBRIDTREE_DEVICE=nvidia py pytest_gpu 150 -m pytest -q -x -p no:cacheprovider tests/gravity/test_direct.py \
    tests/device/test_transfer.py tests/gravity/test_treewalk.py tests/gravity/test_hybrid.py -k "direct or sinks or any_n or transfer or round_trip or scratch or list_walk or plain"
py transfer 90 scripts/bench/transfer.py --device nvidia --n 4194304 16777216 --chunk-mb 4 16 64
py tune_direct 150 scripts/tune/direct.py --device nvidia --n 1048576 --wg 128 256 512 1024 --ni 1 2 4 --split 0 1
HYBRIDTREE_CL_OPTIONS=-cl-denorms-are-zero py tune_direct_daz 60 scripts/tune/direct.py --device nvidia \
    --n 1048576 --wg 256 512 --ni 1 2 4 --split 0
py tune_walk 200 scripts/tune/walk.py --device nvidia --n 1048576 4194304 16777216 --kernels walk_lists \
    --n-group 64 128 256 --sinks 1 2 4 --tile 1 2 --profile
py grav 120 scripts/bench/force.py --device nvidia --n 1048576 4194304 16777216 --direct-n --phases
