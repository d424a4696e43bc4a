# round 175: issue 57, session 40: the changed tests on the H200 (the refit's boxes; substeps that do not
# wait) beside the block-step files they touch
HYBRIDTREE_DEVICE=nvidia py pytest_s40 270 -m pytest -q -p no:cacheprovider -n 0 --tb=short \
    tests/gravity/test_refit.py tests/integrate/test_block_rebin.py tests/integrate/test_block_steps.py
