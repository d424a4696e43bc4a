# round 162: issue 57, session 38: M31 at 2^23 over ten times the span (t = 105): block η 0.8 0.4, shared
# Δt/4 Δt/8, the converged run Δt/16
HYBRIDTREE_DEVICE=nvidia py long_23 560 scripts/bench/pareto.py m31 --device nvidia --n 8388608 --seed 2 \
    --long --eta 0.8 0.4 --shared 2 3 --ref 4 --json "$O/long_23.jsonl" --plot "$O/long_23.png"
