# round 34: issue 21, final code: GPU tests; block against shared steps (warm-up first), 2^20 and 2^22
HYBRIDTREE_DEVICE=nvidia py pytest_gpu 200 -m pytest -q -x -p no:cacheprovider tests/integrate/test_timesteps.py tests/gravity/test_opening.py
py steps_1m 200 scripts/bench/timesteps.py steps --device nvidia --n 1048576 --dt 0.5 --t-end 1.0 --eta 0.2 0.4 --json "$D/steps_1m.json"
py steps_4m 300 scripts/bench/timesteps.py steps --device nvidia --n 4194304 --dt 0.5 --t-end 1.0 --eta 0.2 0.4 --json "$D/steps_4m.json"
