# round 104: issue 30, session 28, final code: the suite's GPU tests
HYBRIDTREE_DEVICE=nvidia py pytest_gpu 560 -m pytest -q -m gpu -p no:cacheprovider --tb=short
