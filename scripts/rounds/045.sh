# round 45: issue 30, session 15 (tune/no_split: since replaced by tune/serial_walk): whole runs with the relative walks split (the default then) against unsplit, 2^22 and 2^24; GPU tests of the walk
HYBRIDTREE_DEVICE=nvidia py pytest_gpu 200 -m pytest -q -x -p no:cacheprovider tests/gravity/test_treewalk.py tests/gravity/test_opening.py
for k in 1 2; do N="4194304 16777216"; [ $k = 2 ] && N=4194304
  py runs_split_$k 200 scripts/bench/step.py runs --device nvidia --n $N --schemes plain-mono --steps 32 \
      --diag-every 8 --json "$D/runs_split_$k.json"
  PYTHONPATH=scripts/tune/no_split:$PWD py runs_nosplit_$k 200 scripts/bench/step.py runs --device nvidia \
      --n $N --schemes plain-mono --steps 32 --diag-every 8 --json "$D/runs_nosplit_$k.json"
done
