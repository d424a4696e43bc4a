# round 153: issue 57, session 37: the Pareto fronts at 2^22 on a wider set (block η 0.8 ... 0.05, shared
# Δt/2 ... Δt/32), the code of session 36's end (9c25a24), before this session's changes
HYBRIDTREE_DEVICE=nvidia py pareto_m31 240 scripts/bench/pareto.py m31 --device nvidia --n 4194304 --seed 2 \
    --eta 0.8 0.4 0.2 0.1 --shared 1 2 3 4 5 --ref 6 --json "$O/m31.jsonl" --plot "$O/m31.png"
HYBRIDTREE_DEVICE=nvidia py pareto_cusp 150 scripts/bench/pareto.py cusp --device nvidia --n 4194304 \
    --eta 0.8 0.4 0.2 0.1 0.05 --shared 1 2 3 4 5 --ref 6 --json "$O/cusp.jsonl" --plot "$O/cusp.png"
HYBRIDTREE_DEVICE=nvidia py substeps 90 scripts/tune/block_substeps.py --device nvidia --n 4194304 \
    --json "$O/substeps.json"
