# round 10: session 5: the direct kernel without the per-tile branch on PoCL 5 (SELF_BRANCH=0 on CPUs)
echo "== pocl_build" >> "$O/index.txt"; bash scripts/tune/check_pocl_build.sh > "$D/pocl_build.txt" 2>&1
HYBRIDTREE_DEVICE=nvidia py pytest_gpu 60 -m pytest -q -x -p no:cacheprovider tests/gravity/test_direct.py
py grav_pocl 120 scripts/bench/force.py --device cpu --n 1048576 --direct-n 65536 --phases --repeat 1
