# round 82: issue 30, session 24, final code: per kernel at 2^22 and 2^24 (the relative walks with COOP), then the suite's GPU tests
py kernels 90 scripts/tune/kernels.py --device nvidia --n 4194304 16777216 --steps 8 --json "$D/kernels.json"
HYBRIDTREE_DEVICE=nvidia py pytest_gpu 300 -m pytest -q -m gpu -p no:cacheprovider --tb=short
