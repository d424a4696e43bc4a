# round 158: issue 57, session 37: M31 at 2^23 with a tenth of the default α, and the cusp at 2^22, with
# this session's code (cheaper set-up and reports)
HYBRIDTREE_DEVICE=nvidia py pareto_m31_23_a3 260 scripts/bench/pareto.py m31 --device nvidia --n 8388608 --seed 2 \
    --set gravity.alpha=0.0003 --eta 0.8 0.4 0.2 --shared 2 3 4 --ref 5 \
    --json "$O/m31_23_a3.jsonl" --plot "$O/m31_23_a3.png"
HYBRIDTREE_DEVICE=nvidia py pareto_cusp 60 scripts/bench/pareto.py cusp --device nvidia --n 4194304 \
    --eta 0.8 0.4 0.2 --shared 1 2 3 --ref 5 --json "$O/cusp.jsonl" --plot "$O/cusp.png"
