# round 1: session 3's baseline (the code as it was at commit cc16df4 plus --peer-cuda)
HYBRIDTREE_DEVICE=nvidia py pytest_gpu 150 -m pytest -q -x -p no:cacheprovider tests/gravity/test_device_sort.py tests/gravity/test_device_build.py
py hybrid_1m 200 scripts/bench/step.py hybrid --n 1000000 --device nvidia --t-end 0.0625 --json
py grav_1m 120 scripts/bench/force.py --device nvidia --n 1000000 --direct-n --build host device --phases --peer-cuda --json "$D/grav_1m.json"
py grav_big 200 scripts/bench/force.py --device nvidia --n 4194304 16777216 --direct-n --phases --peer-cuda --json "$D/grav_big.json"
py grav_pocl 100 scripts/bench/force.py --device cpu --n 1000000 --direct-n --phases --repeat 1
for g in 32 128 256; do py group_$g 60 scripts/bench/force.py --device nvidia --n 4194304 --direct-n --n-group $g --repeat 1 --sample 300; done
(nvidia-smi --query-gpu=memory.used --format=csv,noheader,nounits -lms 100 > "$D/mem_trace.txt" 2>&1 &)
py grav_64m 150 scripts/bench/force.py --device nvidia --n 67108864 --direct-n --phases --repeat 1 --sample 200
pkill -f "nvidia-smi --query"; sort -n "$D/mem_trace.txt" | tail -1 > "$D/mem_max.txt"
