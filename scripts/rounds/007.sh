# round 7: session 5: packed sink groups, unrolled direct tiles, PTX (issue 6)
HYBRIDTREE_DEVICE=nvidia py pytest_gpu 150 -m pytest -q -x -p no:cacheprovider tests/gravity/test_direct.py \
    tests/gravity/test_device_build.py tests/gravity/test_treewalk.py -k "direct or sinks or groups or list_walk or any_n or plain"
py tune_walk 200 scripts/tune/walk.py --device nvidia --n 1048576 4194304 16777216 --kernels walk_lists \
    --n-group 64 128 256 --sinks 1 2 4 --profile
py tune_direct 120 scripts/tune/direct.py --device nvidia --n 1048576 --wg 256 512 1024 --ni 1 2 4 \
    --unroll 0 4 8 --split 0
py ptx_direct 30 scripts/tune/dump_ptx.py --device nvidia --source direct.cl --out "$D/direct.ptx" \
    --define WG=512 NI=1 SPLIT=0 ZERO_GUARD=0
py ptx_eval 30 scripts/tune/dump_ptx.py --device nvidia --source walklist.cl --out "$D/walklist.ptx" \
    --define WG=128 SINKS=1 TILE=128 ZERO_GUARD=0 QUAD=0
py grav 120 scripts/bench/force.py --device nvidia --n 1048576 4194304 16777216 --direct-n --phases
