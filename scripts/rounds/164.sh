# round 164: issue 57, session 39: M31 at 2^22 over ten times the span (t = 105) with the bins chosen only at
# each largest step's start (time.rebin = step; exact-force probes, scripts/tune/probe_hold.py: no drift)
# against the code's rule (substep) in one call: block η 0.8 0.4, each with step and substep, shared Δt/4
# Δt/8, the converged run Δt/16 (kept for round 166: --ref-file)
HYBRIDTREE_DEVICE=nvidia py m31_long_22 580 scripts/bench/pareto.py m31 --device nvidia --n 4194304 \
    --seed 2 --long --eta 0.8 0.4 --rebin step substep --shared 2 3 --ref 4 --ref-file "$O/ref_long_22.npz" \
    --json "$O/m31_long_22.jsonl" --plot "$O/m31_long_22.png"
