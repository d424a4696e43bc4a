# round 168: issue 57, session 39: the block-step tests on the H200 again, after the energy-drift test moved to
# the cusp of N = 2048 (round 167: at N = 512 the step rule drifted too on the H200, a collisional cusp)
HYBRIDTREE_DEVICE=nvidia py pytest_blocks 200 -m pytest -q -p no:cacheprovider -n 0 --tb=short \
    tests/integrate/test_block_rebin.py tests/integrate/test_block_steps.py
