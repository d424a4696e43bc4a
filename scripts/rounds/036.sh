# round 36: issue 21: the criteria's wall times again, the list room reset per configuration (round 33's grew)
py openings 250 scripts/bench/timesteps.py openings --device nvidia --n 4194304 --theta 0.5 --alpha 0.0005 0.001 0.002 --theta-min 0.01 0.25 --json "$D/openings.json"
py errors 250 scripts/bench/timesteps.py errors --device nvidia --n 4194304 --theta 0.5 --alpha 0.0005 0.001 0.002 --json "$D/errors.json"
