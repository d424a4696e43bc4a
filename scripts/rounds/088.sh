# round 88: issue 30, session 25, final code (no merging of active groups; every active group walked with its whole group's box):
# substeps of 2 % and 0.1 % active, block steps on the cusp, the suite's GPU tests
HYBRIDTREE_DEVICE=nvidia py substep_2pc 60 scripts/tune/substep.py 4194304 0.02
HYBRIDTREE_DEVICE=nvidia py substep_01pc 60 scripts/tune/substep.py 4194304 0.001
py steps_4m_0 120 scripts/bench/timesteps.py steps --device nvidia --n 4194304 --dt 0.5 \
    --t-end 1.0 --eta 0.2 --shared-from 5 --refit-fraction 0 --json "$D/steps_4m_0.json"
HYBRIDTREE_DEVICE=nvidia py pytest_gpu 300 -m pytest -q -m gpu -p no:cacheprovider --tb=short
