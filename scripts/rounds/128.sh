# round 128: issues 54-56, session 31: the whole GPU round of the final code (pytest -m gpu), and the memory of runs at
# 2^22 and 2^24 after 72fec7c (a list walk done again lets the smaller room's lists go first)
HYBRIDTREE_DEVICE=nvidia py pytest_gpu 400 -m pytest -q -m gpu -p no:cacheprovider -n 0 --tb=short
py memory 120 scripts/bench/run_memory.py --device nvidia --n 4194304 16777216 --steps 4 --timeout 100
