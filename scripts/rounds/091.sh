# round 91: issue 30, session 26: the list room shrinks only where it split a walk into batches (round 90's block run walked 13
# substeps twice: the room swung between 8192 and 32768); where a cusp block run's time goes; block runs twice and
# shared steps; substeps of 2 % and 0.1 %; whole runs at 2^22 and 2^24 with jz-fmm; per kernel
py block_profile 120 scripts/tune/block_profile.py --device nvidia --n 4194304
py steps_4m_0 150 scripts/bench/timesteps.py steps --device nvidia --n 4194304 --dt 0.5 --t-end 1.0 --eta 0.2 \
    --shared-from 5 --refit-fraction 0 --active-replicate 64 64 --json "$D/steps_4m_0.json"
HYBRIDTREE_DEVICE=nvidia py substep_2pc 90 scripts/tune/substep.py 4194304 0.02 --profile
HYBRIDTREE_DEVICE=nvidia py substep_01pc 90 scripts/tune/substep.py 4194304 0.001
jz_wheels
py runs_default 200 scripts/bench/step.py runs --device nvidia --n 4194304 16777216 --schemes plain-mono --steps 32 \
    --diag-every 8 --peer --json "$D/runs_default.json"
py kernels 90 scripts/tune/kernels.py --device nvidia --n 4194304 16777216 --steps 8 --json "$D/kernels.json"
