# round 38: issue 34: speed unchanged where rsqrt is exact: 2^22 steps and the API force
py step_4m 300 scripts/bench/step.py runs --device nvidia --n 4194304 --schemes plain-mono --steps 48 --diag-every 8 --json "$D/step_4m.json"
py api 200 scripts/bench/step.py api --device nvidia --n 4194304 --steps 16
