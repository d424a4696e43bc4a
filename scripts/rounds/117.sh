# round 117: issue 30, session 30: the suite's GPU tests (nothing ran on the GPU after 9ade647, ilogb in extent_cube; the new
# refit rule and default)
HYBRIDTREE_DEVICE=nvidia py pytest_gpu 500 -m pytest -q -m gpu -p no:cacheprovider --tb=short
