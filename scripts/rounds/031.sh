# round 31: issue 21: block against shared steps on the cusp (largest step 0.5, to t = 1), 2^20 and 2^22
py steps_1m 200 scripts/bench/timesteps.py steps --device nvidia --n 1048576 --dt 0.5 --t-end 1.0 --json "$D/steps_1m.json"
py steps_4m 380 scripts/bench/timesteps.py steps --device nvidia --n 4194304 --dt 0.5 --t-end 1.0 --json "$D/steps_4m.json"
