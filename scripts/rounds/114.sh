# round 114: issue 30, session 29, final code: the reads-and-waits test round 113 failed (mended), the build's and state's tests
HYBRIDTREE_DEVICE=nvidia py tests_gpu 300 -m pytest -q -p no:cacheprovider --tb=short tests/integrate/test_state.py \
    tests/gravity/test_device_build.py tests/gravity/test_refit.py tests/parallel/test_engine_groups.py
