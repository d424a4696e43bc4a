# round 77: issue 30, session 23: the cooperative list walk (COOP work-items walk one group from a stack in local memory)
# against the serial walk with pieces, both criteria, Plummer and cusp, 2^22 and 2^24; eval_lists tunings
py coop 330 scripts/tune/relative.py --device nvidia --n 4194304 16777216 --theta 0.5 --alpha 0.002 \
    --variants "" COOP=32 COOP=64 COOP=16
py eval_tune 110 scripts/tune/relative.py --device nvidia --n 4194304 --models plummer --theta 0.5 --alpha 0.002 \
    --variants TILE=128 SINKS=4 REPLICATE=2 REPLICATE=8 COOP=32,TILE=128
if [ $(( $(date +%s) - T0 )) -lt 300 ]; then    # whole runs at 2^22 with the cooperative walk and without
  COOP=32 PYTHONPATH=scripts/tune/coop:$PWD py runs_coop32 120 scripts/bench/step.py runs --device nvidia --n 4194304 \
      --schemes plain-mono --steps 32 --diag-every 8 --json "$D/runs_coop32.json"
  py runs_default 120 scripts/bench/step.py runs --device nvidia --n 4194304 --schemes plain-mono --steps 32 \
      --diag-every 8 --json "$D/runs_default.json"
fi
