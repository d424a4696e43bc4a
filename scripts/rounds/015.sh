# round 15: session 6: the final code's GPU tests, hybrid steps and 2^26 with the new defaults
HYBRIDTREE_DEVICE=nvidia py pytest_gpu 120 -m pytest -q -p no:cacheprovider tests/gravity/test_treewalk.py \
    tests/device/test_transfer.py tests/gravity/test_hybrid.py -k "list_walk or buffered or copies or release or on_device or round_trip"
py hybrid_1m 60 scripts/bench/step.py hybrid --n 1000000 --device nvidia --t-end 0.0625 --json
py grav_64m 200 scripts/bench/force.py --device nvidia --n 67108864 --direct-n --phases --repeat 1 --sample 200
