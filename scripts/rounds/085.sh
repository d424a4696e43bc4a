# round 85 (and round 86, same commands): issue 30, session 25 (86: the same again after merged groups were bounded by their boxes' spread and walked with
# their whole groups' boxes): sparse active groups walked together (ACTIVE_MERGE; removed after round 87, history.md §24): the walk's, opening, block-step tests on
# the GPU; substeps of 2 % and 0.1 % active; block against shared steps on the cusp, building and refitting (f = 0.1)
HYBRIDTREE_DEVICE=nvidia py tests_gpu 200 -m pytest -q -x -p no:cacheprovider tests/gravity/test_treewalk.py \
    tests/gravity/test_opening.py tests/integrate/test_timesteps.py tests/cosmo/test_box_block_steps.py
HYBRIDTREE_DEVICE=nvidia py substep_2pc 60 scripts/tune/substep.py 4194304 0.02
HYBRIDTREE_DEVICE=nvidia py substep_01pc 60 scripts/tune/substep.py 4194304 0.001
for f in 0 0.1; do py steps_4m_$f 120 scripts/bench/timesteps.py steps --device nvidia --n 4194304 --dt 0.5 \
    --t-end 1.0 --eta 0.2 --shared-from 5 --refit-fraction $f --json "$D/steps_4m_$f.json"; done
