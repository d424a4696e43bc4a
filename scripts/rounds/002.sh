# round 2
HYBRIDTREE_DEVICE=nvidia py pytest_gpu 200 -m pytest -q -x -p no:cacheprovider tests/gravity/test_treewalk.py \
    tests/gravity/test_hybrid.py tests/gravity/test_device_build.py -k "list_walk or upload or device_tree"
py tune_walk 200 scripts/tune/walk.py --device nvidia --n 1000000 4194304 --kernels tree_walk walk_lists \
    --n-group 32 64 128 256 --tile 1 2 4
py hybrid_1m 120 scripts/bench/step.py hybrid --n 1000000 --device nvidia --t-end 0.0625 --json
py grav 200 scripts/bench/force.py --device nvidia --n 1000000 4194304 16777216 --direct-n --phases \
    --peer-cuda --json "$D/grav.json"
(nvidia-smi --query-gpu=memory.used --format=csv,noheader,nounits -lms 100 > "$D/mem_trace.txt" 2>&1 &)
py grav_64m 150 scripts/bench/force.py --device nvidia --n 67108864 --direct-n --phases --repeat 1 --sample 200
pkill -f "nvidia-smi --query"; sort -n "$D/mem_trace.txt" | tail -1 > "$D/mem_max.txt"
