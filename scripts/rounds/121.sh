# round 121: issue 30, session 30: radix_scatter writes in the tile's sorted order (coalesced stores; inverse places in local
# memory, keys read again from the cache) against 8d4d9e2's scatter in input order (build/old), alternating: the
# sort alone (Plummer keys; the GPU tuning and 256,8,8,4 with half the tile), whole runs at 2^22 and 2^24, the
# sort's and build's GPU tests
HYBRIDTREE_DEVICE=nvidia py tests_gpu 150 -m pytest -q -p no:cacheprovider --tb=short tests/gravity/test_device_sort.py \
    tests/gravity/test_device_build.py
for v in new1 old1 new2 old2; do code $v
  py sort_$v 90 scripts/tune/sort.py --device nvidia --n 1048576 4194304 16777216 --keys plummer --repeat 5 \
      --tuning 256,16,8,4 256,8,8,4
done
for v in new old; do code $v
  py runs_$v 130 scripts/bench/step.py runs --device nvidia --n 4194304 16777216 --schemes plain-mono --steps 32 \
      --diag-every 8
done
export PYTHONPATH=$PWD
