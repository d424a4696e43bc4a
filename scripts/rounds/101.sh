# round 101: issue 30, session 28: sinks per group for the relative criterion at 2^22 (128, the default below 2^23, against 256):
# force errors, the walk's rate, whole runs alternating, 2 % substeps; 2^24's 256 against 512
py errors 200 -u scripts/bench/timesteps.py errors --device nvidia --n 4194304 --sample 1000 --theta 0.5 \
    --alpha 0.003 --orders monopole --n-group 128 256 --json "$D/errors.json"
py relative 200 scripts/tune/relative.py --device nvidia --n 4194304 --theta 0.5 --alpha 0.003 --n-group 128 256
for i in 1 2; do for g in 128 256; do
  py runs_g${g}_$i 120 scripts/bench/step.py runs --device nvidia --n 4194304 --schemes plain-mono --steps 32 \
      --diag-every 8 --set gravity.n_group=$g
done; done
for g in 128 256; do
  HYBRIDTREE_DEVICE=nvidia py substep_rel_g$g 60 scripts/tune/substep.py 4194304 0.02 --alpha 0.003 --n-group $g
  HYBRIDTREE_DEVICE=nvidia py substep_geo_g$g 60 scripts/tune/substep.py 4194304 0.02 --n-group $g
done
[ $(( $(date +%s) - T0 )) -lt 420 ] && py relative_24 150 scripts/tune/relative.py --device nvidia --n 16777216 \
    --theta 0.5 --alpha 0.003 --n-group 256 512
