# round 165: issue 57, session 39: M31 at 2^23 over ten times the span (t = 105): block η 0.8 0.4 with
# time.rebin = step (the substep rows: round 162, the same seed and code), shared Δt/4 Δt/8, the converged
# run Δt/16
HYBRIDTREE_DEVICE=nvidia py m31_long_23 580 scripts/bench/pareto.py m31 --device nvidia --n 8388608 \
    --seed 2 --long --eta 0.8 0.4 --rebin step --shared 2 3 --ref 4 --ref-file "$O/ref_long_23.npz" \
    --json "$O/m31_long_23.jsonl" --plot "$O/m31_long_23.png"
