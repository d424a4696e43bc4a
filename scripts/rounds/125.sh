# round 125: issues 54-56, session 31: the GPU tests of the merged session (far particles: quadrupole terms in d/r in
# cl/walkcommon.cl and cl/treewalk.cl; the device memory ledger; list batches of at most 2 GiB), then whole runs of
# the session's code against a98ebd6 (build/old), alternating, as round 124
HYBRIDTREE_DEVICE=nvidia py pytest_gpu 330 -m pytest -q -m gpu -p no:cacheprovider --tb=short
for v in new old new2 old2; do code $v
  py runs_$v 60 scripts/bench/step.py runs --device nvidia --n 4194304 16777216 --schemes plain-mono --steps 32 \
      --diag-every 8
done
