# round 122: issue 30, session 30, final code: the sort's GPU tuning in tiles of 2048 keys (256,8,8,4) with the scatter in
# sorted order, against 8d4d9e2 (build/old), alternating: the sort alone, whole runs at 2^22 and 2^24; M31 at 2^23
# with the defaults; the suite's GPU tests
for v in new1 old1 new2 old2; do code $v
  py sort_$v 60 scripts/tune/sort.py --device nvidia --n 1048576 4194304 16777216 --keys plummer --repeat 5
  py runs_$v 100 scripts/bench/step.py runs --device nvidia --n 4194304 16777216 --schemes plain-mono --steps 32 \
      --diag-every 8
done
export PYTHONPATH=$PWD
REPO=$PWD
(cd /tmp && py m31_23 200 "$REPO/scripts/bench/galaxy.py" "$REPO/configs/galaxy_m31.toml" --n 8388608 --t-end 10.5 \
    --device nvidia --out /tmp/m31_23 --json "$D/m31_23.json")
HYBRIDTREE_DEVICE=nvidia py pytest_gpu 300 -m pytest -q -m gpu -p no:cacheprovider --tb=short
