# round 3
HYBRIDTREE_DEVICE=nvidia py pytest_gpu 200 -m pytest -q -x -p no:cacheprovider tests/gravity/test_treewalk.py \
    tests/gravity/test_hybrid.py tests/gravity/test_device_build.py -k "list_walk or upload or device_tree or self"
py tune_walk 200 scripts/tune/walk.py --device nvidia --n 1000000 4194304 16777216 --kernels walk_lists \
    --n-group 64 128 256 --tile 1 4 --profile
py hybrid_1m 120 scripts/bench/step.py hybrid --n 1000000 --device nvidia --t-end 0.0625 --json
py hybrid_1m_quad 120 scripts/bench/step.py hybrid --n 1000000 --device nvidia --t-end 0.0625 --json --multipole quadrupole
py grav 200 scripts/bench/force.py --device nvidia --n 1000000 4194304 16777216 --direct-n --phases --json "$D/grav.json"
py grav_pocl 150 scripts/bench/force.py --device cpu --n 1000000 --direct-n --phases --repeat 1
(nvidia-smi --query-gpu=memory.used --format=csv,noheader,nounits -lms 100 > "$D/mem_trace.txt" 2>&1 &)
py grav_128m 240 scripts/bench/force.py --device nvidia --n 134217728 --direct-n --phases --repeat 1 --sample 200
pkill -f "nvidia-smi --query"; sort -n "$D/mem_trace.txt" | tail -1 > "$D/mem_max.txt"
