# round 99: issue 30, session 27, final code: the suite's GPU tests
HYBRIDTREE_DEVICE=nvidia py pytest_gpu 560 -m pytest -q -m gpu -p no:cacheprovider --tb=short
