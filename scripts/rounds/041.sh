# round 41: issue 30: 32-step energy runs at 2^22 and 2^24 (both criteria), jz-fmm in the same run; PoCL's curve
py runs_geo 200 scripts/bench/step.py runs --device nvidia --n 4194304 16777216 --schemes plain-mono --steps 32 \
    --diag-every 8 --peer --set gravity.opening='"geometric"' --json "$D/runs_geo.json"
for al in 0.002 0.003; do py runs_rel_$al 150 scripts/bench/step.py runs --device nvidia --n 4194304 16777216 \
    --schemes plain-mono --steps 32 --diag-every 8 --set gravity.opening='"relative"' --set gravity.alpha=$al \
    --json "$D/runs_rel_$al.json"; done
py pocl_errors 150 scripts/bench/timesteps.py errors --device cpu --n 100000 --sample 1000 --theta 0.5 0.6 \
    --alpha 0.002 0.003 0.005 --json "$D/pocl_errors.json"
