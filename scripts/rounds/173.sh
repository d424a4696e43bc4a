# round 173: issue 57, session 40: M31 at 2^23 over ten times the span (t = 105) with the refit's boxes:
# block eta 0.8, 0.4 (time.rebin = step) against shared dt / 4, dt / 8 and the converged dt / 16
HYBRIDTREE_DEVICE=nvidia py m31_long_23 590 scripts/bench/pareto.py m31 --device nvidia --n 8388608 \
    --seed 2 --long --eta 0.8 0.4 --rebin step --shared 2 3 --ref 4 --json "$O/m31_long_23.jsonl"
