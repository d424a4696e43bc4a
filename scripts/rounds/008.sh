# round 8: session 5 final: packed groups (box-limited), defaults SINKS=2 and NI=2; the issue 6 table
HYBRIDTREE_DEVICE=nvidia py pytest_gpu 100 -m pytest -q -x -p no:cacheprovider tests/gravity/test_device_build.py \
    tests/gravity/test_treewalk.py -k "groups or list_walk or equals"
py tune_walk 150 scripts/tune/walk.py --device nvidia --n 1048576 4194304 16777216 --kernels walk_lists \
    --n-group 128 256 --sinks 1 2 --pack 0 1 --profile
py grav 200 scripts/bench/force.py --device nvidia --n 1048576 4194304 16777216 --direct-n 1048576 \
    --phases --peer-cuda --json "$D/grav.json"
py scaling 120 scripts/bench/force.py --device nvidia --n 1024 4096 16384 65536 262144 \
    --direct-n 1024 4096 16384 65536 262144 --repeat 3 --sample 200 --json "$D/scaling.json"
py grav_pocl 120 scripts/bench/force.py --device cpu --n 1048576 --direct-n 65536 --phases --repeat 1 \
    --json "$D/pocl.json"
(nvidia-smi --query-gpu=memory.used --format=csv,noheader,nounits -lms 100 > "$D/mem_trace.txt" 2>&1 &)
py grav_64m 150 scripts/bench/force.py --device nvidia --n 67108864 --direct-n --phases --repeat 1 --sample 200
pkill -f "nvidia-smi --query"; sort -n "$D/mem_trace.txt" | tail -1 > "$D/mem_max.txt"
