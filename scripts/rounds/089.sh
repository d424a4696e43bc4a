# round 89: issue 30, session 26: the active walk spreads a small group's list over the whole work-group (then REPLICATE 64 as a define; since round 90 ACTIVE_COPIES
# against 4), one blocking read less per substep, a list room that shrinks: the walk and block-step tests on the GPU;
# substeps of 2 % and 0.1 % active with a kernel profile; block against shared steps on the cusp (REPLICATE 4 and 64
# in one process, and refitting f = 0.1)
HYBRIDTREE_DEVICE=nvidia py tests_gpu 200 -m pytest -q -p no:cacheprovider tests/gravity/test_treewalk.py \
    tests/integrate/test_timesteps.py tests/cosmo/test_box_block_steps.py tests/gravity/test_refit.py
HYBRIDTREE_DEVICE=nvidia py substep_2pc 90 scripts/tune/substep.py 4194304 0.02 --replicate 4 16 64 --profile
HYBRIDTREE_DEVICE=nvidia py substep_01pc 60 scripts/tune/substep.py 4194304 0.001 --replicate 4 64 --profile
py steps_4m_0 150 scripts/bench/timesteps.py steps --device nvidia --n 4194304 --dt 0.5 --t-end 1.0 --eta 0.2 \
    --shared-from 5 --refit-fraction 0 --active-replicate 4 64 --json "$D/steps_4m_0.json"
py steps_4m_01 100 scripts/bench/timesteps.py steps --device nvidia --n 4194304 --dt 0.5 --t-end 1.0 --eta 0.2 \
    --shared-from 6 --refit-fraction 0.1 --json "$D/steps_4m_01.json"
