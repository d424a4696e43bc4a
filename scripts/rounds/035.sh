# round 35: final code of session 10 (issues 21, 22): GPU tests of the changed kernels; step time unchanged
HYBRIDTREE_DEVICE=nvidia py pytest_gpu 400 -m pytest -q -p no:cacheprovider tests/integrate/test_timesteps.py tests/gravity/test_opening.py \
    tests/gravity/test_treewalk.py tests/gravity/test_direct.py tests/device/test_reduce.py tests/device/test_device_limits.py tests/integrate/test_state.py
py openings 120 scripts/bench/timesteps.py openings --device nvidia --n 4194304 --theta 0.5 --alpha 0.002 --json "$D/openings.json"
