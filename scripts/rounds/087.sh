# round 87: issue 30, session 25 (ACTIVE_MERGE and substep.py's "alone" removed since): merged active groups kept within their shallowest member's parent cell (round 86's 2 % substep
# left a list room that slowed every later walk 12 x); substeps merged and alone, block steps on the cusp, the tests
HYBRIDTREE_DEVICE=nvidia py substep_2pc 60 scripts/tune/substep.py 4194304 0.02
HYBRIDTREE_DEVICE=nvidia py substep_2pc_alone 60 scripts/tune/substep.py 4194304 0.02 5 alone
HYBRIDTREE_DEVICE=nvidia py substep_01pc 60 scripts/tune/substep.py 4194304 0.001
py steps_4m_0 120 scripts/bench/timesteps.py steps --device nvidia --n 4194304 --dt 0.5 \
    --t-end 1.0 --eta 0.2 --shared-from 5 --refit-fraction 0 --json "$D/steps_4m_0.json"
HYBRIDTREE_DEVICE=nvidia py tests_gpu 200 -m pytest -q -x -p no:cacheprovider tests/gravity/test_treewalk.py \
    tests/integrate/test_timesteps.py tests/cosmo/test_box_block_steps.py
