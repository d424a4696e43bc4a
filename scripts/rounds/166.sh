# round 166: issue 57, session 39: time.rebin = step against substep (the code's rule until now) in one call
# each: M31 at 2^22 over the span (t = 10.5; block η 0.8 0.4 0.2, shared Δt/4 ... Δt/16, the
# converged run Δt/32); the cusp at 2^22 over the span (t = 0.5; η 0.8 0.4 0.2, shared Δt/4 ... Δt/16,
# converged Δt/64) and over ten times it (t = 5; η 0.8 0.4, shared Δt/2 Δt/4, converged Δt/32)
HYBRIDTREE_DEVICE=nvidia py m31_22 240 scripts/bench/pareto.py m31 --device nvidia --n 4194304 --seed 2 \
    --eta 0.8 0.4 0.2 --rebin step substep --shared 2 3 4 --ref 5 --json "$O/m31_22.jsonl" --plot "$O/m31_22.png"
HYBRIDTREE_DEVICE=nvidia py cusp_22 100 scripts/bench/pareto.py cusp --device nvidia --n 4194304 \
    --eta 0.8 0.4 0.2 --rebin step substep --shared 2 3 4 --ref 6 --json "$O/cusp_22.jsonl"
HYBRIDTREE_DEVICE=nvidia py cusp_long_22 200 scripts/bench/pareto.py cusp --device nvidia --n 4194304 \
    --long --eta 0.8 0.4 --rebin step substep --shared 1 2 --ref 5 --json "$O/cusp_long_22.jsonl"
