# round 172: issue 57, session 40: M31 at 2^22 over ten times the span (t = 105), block eta 0.8
# (time.rebin = step), the code before the refit's boxes (build/old = 85670c0) and after, alternating
# old, new, old, new against one converged run (dt / 16, made by the first call, kept in /tmp)
for v in old new old new; do
  code $v
  n=$(( ${n:-0} + 1 ))
  HYBRIDTREE_DEVICE=nvidia py alt${n}_$v 240 scripts/bench/pareto.py m31 --device nvidia --n 4194304 \
      --seed 2 --long --eta 0.8 --rebin step --shared --ref 4 --ref-file /tmp/ref_long_22.npz \
      --json "$D/alt${n}_$v.jsonl"
done
code new
for f in "$D"/alt*.jsonl; do sed "s/^{/{\"file\": \"$(basename "$f")\", /" "$f"; done > "$O/alt.jsonl"
