# round 69: session 21, final code: the whole suite on the GPU
HYBRIDTREE_DEVICE=nvidia py pytest_all 560 -m pytest -q -p no:cacheprovider --tb=short -x
