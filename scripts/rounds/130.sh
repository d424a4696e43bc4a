# round 130: issues 55-56, session 32: the GPU tests of the merged code (every helper's branch in), and whole steps of
# it against 9f66c2b (build/old) alternating as round 127
HYBRIDTREE_DEVICE=nvidia py pytest_gpu 300 -m pytest -q -m gpu -p no:cacheprovider -n 0 --tb=short
for v in new old new2 old2; do code $v
  py runs_$v 60 scripts/bench/step.py runs --device nvidia --n 4194304 16777216 --schemes plain-mono --steps 32 \
      --diag-every 8
done
