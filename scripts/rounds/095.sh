# round 95: issue 30, session 27: an active walk merges consecutive sparse groups (ACTIVE_MERGE: window, cap, grow): the walk and
# block-step tests on the GPU; substeps of 2 % (merge variants; the default profiled) and 0.1 %; cusp block runs merged
# and not, and shared steps
HYBRIDTREE_DEVICE=nvidia py tests_gpu 240 -m pytest -q -p no:cacheprovider tests/gravity/test_treewalk.py \
    tests/integrate/test_timesteps.py tests/cosmo/test_box_block_steps.py tests/gravity/test_refit.py
HYBRIDTREE_DEVICE=nvidia py substep_2pc 200 scripts/tune/substep.py 4194304 0.02 --merge 1,0,1 2,32,2.05 4,32,2.05 \
    8,32,2.05 16,32,2.05 8,16,2.05 8,64,2.05 8,32,3 8,32,1.55
HYBRIDTREE_DEVICE=nvidia py substep_2pc_prof 90 scripts/tune/substep.py 4194304 0.02 --merge 1,0,1 --profile
HYBRIDTREE_DEVICE=nvidia py substep_01pc 90 scripts/tune/substep.py 4194304 0.001 --merge 1,0,1
py steps_4m_0 200 scripts/bench/timesteps.py steps --device nvidia --n 4194304 --dt 0.5 --t-end 1.0 --eta 0.2 \
    --shared-from 5 --refit-fraction 0 --active-merge 1,0,1 8,32,2.05 4,32,2.05 1,0,1 8,32,2.05 --json "$D/steps_4m_0.json"
