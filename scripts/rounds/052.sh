# round 52: session 18: round 51 again within its time (the float64 spline reference on the host at 2^20 took minutes): 2^22, 2^24 and direct 2^18, 200 sampled sinks
for s in plummer spline; do
  py force_$s 250 scripts/bench/force.py --device nvidia --n 4194304 16777216 --direct-n 262144 \
      --softening $s --sample 200 --json "$D/force_$s.json"
done
