# round 30: issue 21: block steps and the relative opening criterion: GPU tests, force errors, steps at 2^20
HYBRIDTREE_DEVICE=nvidia py pytest_gpu 200 -m pytest -q -x -p no:cacheprovider tests/integrate/test_timesteps.py tests/gravity/test_opening.py
py cosmo_small 200 -m hybridtree run configs/cosmo_small.toml --set output.dir=/tmp/cs --set gravity.device=nvidia --quiet
Z0=$(ls /tmp/cs/snapshot_*.hdf5 | tail -1); echo "z=0 snapshot: $Z0" >> "$O/index.txt"
py errors 400 scripts/bench/timesteps.py errors --device nvidia --n 1048576 4194304 --snapshot "$Z0" --snap-eps 0.04 --json "$D/errors.json"
py steps_1m 300 scripts/bench/timesteps.py steps --device nvidia --n 1048576 --json "$D/steps_1m.json"
