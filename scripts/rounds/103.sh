# round 103: issue 30, session 28, final code (relative walks in groups of 256 from 2^22 sinks): whole runs with jz-fmm at 2^22
# and 2^24; the walk's rate at the defaults (geometric theta = 0.5 against relative alpha = 0.003); 0.1 % and 2 %
# substeps; the cusp's block run against shared steps
jz_wheels
py runs 200 scripts/bench/step.py runs --device nvidia --n 4194304 16777216 --schemes plain-mono --steps 32 \
    --diag-every 8 --peer --json "$D/runs.json"
py relative 150 scripts/tune/relative.py --device nvidia --n 4194304 16777216 --theta 0.5 --alpha 0.003
for f in 0.001 0.02; do
  HYBRIDTREE_DEVICE=nvidia py substep_rel_$f 60 scripts/tune/substep.py 4194304 $f --alpha 0.003
  HYBRIDTREE_DEVICE=nvidia py substep_geo_$f 60 scripts/tune/substep.py 4194304 $f
done
py steps_4m 170 scripts/bench/timesteps.py steps --device nvidia --n 4194304 --dt 0.5 --t-end 1.0 --eta 0.2 \
    --shared-from 5 --refit-fraction 0 --json "$D/steps_4m.json"
