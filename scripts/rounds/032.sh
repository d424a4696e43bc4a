# round 32: issue 21: block steps with tree refits, two eta; the criteria inside runs
py steps_1m 200 scripts/bench/timesteps.py steps --device nvidia --n 1048576 --dt 0.5 --t-end 1.0 --eta 0.2 0.4 --json "$D/steps_1m.json"
py steps_4m 300 scripts/bench/timesteps.py steps --device nvidia --n 4194304 --dt 0.5 --t-end 1.0 --eta 0.2 0.4 --json "$D/steps_4m.json"
py openings 200 scripts/bench/timesteps.py openings --device nvidia --n 4194304 --theta 0.5 0.7 --alpha 0.0005 0.001 0.002 --json "$D/openings.json"
