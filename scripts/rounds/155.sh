# round 155: issue 57, session 37: the Pareto fronts at 2^23 (M31, the cusp), and M31 at 2^22 with more refits
# for the larger η (block η 0.8, 0.4 × gravity.refit_fraction 0.05, 0.25, 1); the code after the set-up's
# checks were made cheaper (particles.bounds, all_finite)
HYBRIDTREE_DEVICE=nvidia py pareto_m31_23 300 scripts/bench/pareto.py m31 --device nvidia --n 8388608 --seed 2 \
    --eta 0.8 0.4 0.2 --shared 2 3 4 5 --ref 6 --json "$O/m31_23.jsonl" --plot "$O/m31_23.png"
HYBRIDTREE_DEVICE=nvidia py pareto_cusp_23 120 scripts/bench/pareto.py cusp --device nvidia --n 8388608 \
    --eta 0.8 0.4 0.2 0.1 --shared 1 2 3 4 --ref 6 --json "$O/cusp_23.jsonl" --plot "$O/cusp_23.png"
HYBRIDTREE_DEVICE=nvidia py pareto_m31_refit 120 scripts/bench/pareto.py m31 --device nvidia --n 4194304 --seed 2 \
    --eta 0.8 0.4 --refit 0.05 0.25 1 --shared 3 --ref 5 --json "$O/m31_refit.jsonl"
