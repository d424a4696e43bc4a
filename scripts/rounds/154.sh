# round 154: issue 57, session 37: where a short run's wall goes beside its steps (set-up, first forces,
# diagnostics), M31 and the cusp at 2^22, the code of 9c25a24
HYBRIDTREE_DEVICE=nvidia py costs_m31 200 scripts/tune/run_costs.py m31 --device nvidia --n 4194304 \
    --how block:0.8 shared:3 --json "$O/costs_m31.json"
HYBRIDTREE_DEVICE=nvidia py costs_cusp 120 scripts/tune/run_costs.py cusp --device nvidia --n 4194304 \
    --how block:0.4 shared:2 --json "$O/costs_cusp.json"
