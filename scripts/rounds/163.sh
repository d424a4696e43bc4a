# round 163: issue 57, session 38: the cusp at 2^23 over ten times the span (t = 5; block η 0.8 0.4, shared
# Δt/2 Δt/4, the converged run Δt/32), the last of the sizes and spans on the H200
HYBRIDTREE_DEVICE=nvidia py cusp_long_23 200 scripts/bench/pareto.py cusp --device nvidia --n 8388608 \
    --long --eta 0.8 0.4 --shared 1 2 --ref 5 --json "$O/cusp_long_23.jsonl" --plot "$O/cusp_long_23.png"
