# round 171: issue 57, session 40: refits that move a cell's cube with its particles (cl/treebuild.cl
# cell_moments' boxes).  M31 at 2^22: interactions a force per bin, old (build/old = 85670c0) and new,
# the default refit budget and refits of every substep (4 largest steps, the same arrays); then the
# new code over ten times the span (t = 105) against shared steps, the converged run kept in $O
for f in 0.05 1; do
  for v in old new; do
    code $v
    HYBRIDTREE_DEVICE=nvidia py bins_${v}_f$f 240 scripts/tune/refit_bins.py --device nvidia \
        --n 4194304 --steps 4 --ics "$D/m31_22.npz" --set time.eta=0.8 \
        --set gravity.refit_fraction=$f --json "$O/bins.jsonl"
  done
done
code new
HYBRIDTREE_DEVICE=nvidia py m31_long_22 420 scripts/bench/pareto.py m31 --device nvidia --n 4194304 \
    --seed 2 --long --eta 0.8 0.4 --rebin step --shared 2 3 --ref 4 --ref-file "$O/ref_long_22.npz" \
    --json "$O/m31_long_22.jsonl"
