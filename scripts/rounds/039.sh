# round 39: issue 34: the whole suite on the GPU, final code
HYBRIDTREE_DEVICE=nvidia py pytest_all 560 -m pytest -q -p no:cacheprovider --tb=short
