# round 79: issue 30, session 24: the relative walks now COOP = 32 by default (the pieces gone): whole runs with jz-fmm at 2^22
# and 2^24, the force errors at alpha 0.002..0.005, runs at alpha 0.003 and 0.004, the serial walk as partner
jz_wheels
py runs_default 220 scripts/bench/step.py runs --device nvidia --n 4194304 16777216 --schemes plain-mono --steps 32 \
    --diag-every 8 --peer --json "$D/runs_default.json"
py errors 120 scripts/bench/timesteps.py errors --device nvidia --n 4194304 16777216 --sample 1000 --theta 0.5 \
    --alpha 0.002 0.003 0.004 0.005 --json "$D/errors.json"
for al in 0.003 0.004; do [ $(( $(date +%s) - T0 )) -lt 420 ] || break
  py runs_rel_$al 100 scripts/bench/step.py runs --device nvidia --n 4194304 16777216 --schemes plain-mono --steps 32 \
      --diag-every 8 --set gravity.alpha=$al --json "$D/runs_rel_$al.json"; done
[ $(( $(date +%s) - T0 )) -lt 480 ] && PYTHONPATH=scripts/tune/serial_walk:$PWD py runs_serial 100 \
    scripts/bench/step.py runs --device nvidia --n 4194304 16777216 --schemes plain-mono --steps 32 --diag-every 8 \
    --json "$D/runs_serial.json"
