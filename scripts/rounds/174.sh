# round 174: issue 57, session 40: substeps that do not wait (time.rebin = step: interactions noted on the
# device); M31 at 2^22 to t = 105, block eta 0.8 and 0.4, the code before (build/old = 01de515, the
# refit's boxes) and after, alternating old, new, old, new (eta 0.8) and old, new (eta 0.4), one converged run
for spec in "old 0.8" "new 0.8" "old 0.8" "new 0.8" "old 0.4" "new 0.4"; do
  set -- $spec
  code $1
  n=$(( ${n:-0} + 1 ))
  HYBRIDTREE_DEVICE=nvidia py q${n}_$1_$2 240 scripts/bench/pareto.py m31 --device nvidia --n 4194304 \
      --seed 2 --long --eta $2 --rebin step --shared --ref 4 --ref-file /tmp/ref_long_22.npz \
      --json "$D/q${n}_$1_$2.jsonl"
done
code new
for f in "$D"/q*.jsonl; do sed "s/^{/{\"file\": \"$(basename "$f")\", /" "$f"; done > "$O/quiet.jsonl"
rm -f "$O"/q*.txt
