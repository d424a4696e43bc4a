# round 170: issue 57, session 39: the cusp at 2^23 over ten times the span (t = 5) with time.rebin = step
# (block η 0.8 0.4; round 163 has the substep rows, the same seed and code), shared Δt/2 Δt/4, converged Δt/32
HYBRIDTREE_DEVICE=nvidia py cusp_long_23 200 scripts/bench/pareto.py cusp --device nvidia --n 8388608 \
    --long --eta 0.8 0.4 --rebin step --shared 1 2 --ref 5 --json "$O/cusp_long_23.jsonl"
