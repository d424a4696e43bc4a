# round 156: issue 57, session 37: the fronts with a force accurate enough that the energy error measures
# the steps (gravity.alpha = 3e-4, a tenth of the default: at the default the energy sits at the force's
# floor, which grows with the forces computed, rounds 153/155), M31 and the cusp at 2^22; and the cusp over
# ten times its span (--long) at the default force
HYBRIDTREE_DEVICE=nvidia py pareto_m31_a3 300 scripts/bench/pareto.py m31 --device nvidia --n 4194304 --seed 2 \
    --set gravity.alpha=0.0003 --eta 0.8 0.4 0.2 --shared 2 3 4 5 --ref 6 \
    --json "$O/m31_a3.jsonl" --plot "$O/m31_a3.png"
HYBRIDTREE_DEVICE=nvidia py pareto_cusp_a3 120 scripts/bench/pareto.py cusp --device nvidia --n 4194304 \
    --set gravity.alpha=0.0003 --eta 0.8 0.4 0.2 0.1 --shared 1 2 3 4 --ref 6 \
    --json "$O/cusp_a3.jsonl" --plot "$O/cusp_a3.png"
HYBRIDTREE_DEVICE=nvidia py pareto_cusp_long 150 scripts/bench/pareto.py cusp --device nvidia --n 4194304 --long \
    --eta 0.8 0.4 0.2 --shared 1 2 3 --ref 5 --json "$O/cusp_long.jsonl"
