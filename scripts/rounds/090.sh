# round 90: issue 30, session 26: copies of a small active group's sinks as a kernel argument (ACTIVE_COPIES; all active: the full
# walk's), the tests; where a cusp block run's time goes (per kernel, block against shared); block runs with 4 and 64
# copies alternating in one process; substeps of 2 % with 4 and 64 copies
HYBRIDTREE_DEVICE=nvidia py tests_gpu 200 -m pytest -q -p no:cacheprovider tests/gravity/test_treewalk.py \
    tests/integrate/test_timesteps.py tests/cosmo/test_box_block_steps.py tests/gravity/test_refit.py
py block_profile 120 scripts/tune/block_profile.py --device nvidia --n 4194304
py steps_4m_0 150 scripts/bench/timesteps.py steps --device nvidia --n 4194304 --dt 0.5 --t-end 1.0 --eta 0.2 \
    --shared-from 5 --refit-fraction 0 --active-replicate 4 64 4 64 --json "$D/steps_4m_0.json"
HYBRIDTREE_DEVICE=nvidia py substep_2pc 90 scripts/tune/substep.py 4194304 0.02 --replicate 4 64 --profile
