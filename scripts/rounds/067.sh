# round 67: issue 30, session 21, final code of the round: a level of the reductions per value; whole runs with jz-fmm beside;
# block steps on the cusp at 2^22 (building every substep, then refits with f = 0.1); a substep's cost; the paper's cosmological sphere
jz_wheels
py kernels 120 scripts/tune/kernels.py --device nvidia --n 4194304 --steps 8 --json "$D/kernels.json"
py runs_default 300 scripts/bench/step.py runs --device nvidia --n 4194304 16777216 --schemes plain-mono --steps 32 \
    --diag-every 8 --peer --json "$D/runs_default.json"
py steps_4m 300 scripts/bench/timesteps.py steps --device nvidia --n 4194304 --dt 0.5 --t-end 1.0 --eta 0.2 \
    --shared-from 5 --refit-fraction 0 --json "$D/steps_4m.json"
py steps_4m_refit 150 scripts/bench/timesteps.py steps --device nvidia --n 4194304 --dt 0.5 --t-end 1.0 --eta 0.2 \
    --shared-from 99 --refit-fraction 0.1 --json "$D/steps_4m_refit.json"
HYBRIDTREE_DEVICE=nvidia py substep_2pc 60 scripts/tune/substep.py 4194304 0.02
HYBRIDTREE_DEVICE=nvidia py substep_01pc 60 scripts/tune/substep.py 4194304 0.001
py cosmo_sphere 400 scripts/bench/cosmo.py configs/cosmo_sphere.toml --device nvidia --out /tmp/cs --json "$D/cosmo_sphere.json"
