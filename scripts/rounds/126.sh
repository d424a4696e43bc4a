# round 126: issues 54-56, session 31: the quadrupole kernels with the monopole term rounded as before (round 125:
# the two walks differed by 1.1e-5 at most, above the test's 1e-5) and the far-pair test of a normal r^2: their GPU
# tests; one force with quadrupoles, new against a98ebd6 (build/old); the list batch budget against the step (round
# 125: 2^24 steps 0.0585 s against 0.0549 s with 2 GiB); the device memory of runs by owner (the ledger) beside
# nvidia-smi, 2^20 ... 2^27
HYBRIDTREE_DEVICE=nvidia py tests_gpu 150 -m pytest -q -p no:cacheprovider --tb=short tests/gravity/test_treewalk.py \
    tests/gravity/test_far_particles.py tests/gravity/test_list_batches.py tests/device/test_memory.py
for v in new old; do code $v
  py quad_$v 60 scripts/bench/force.py --device nvidia --n 4194304 16777216 --direct-n --multipole quadrupole --repeat 3
done
code new
py batch_24 90 scripts/tune/list_batch.py --device nvidia --n 16777216 --gib 2 4 8 0 --steps 8 --rounds 2
py batch_22 60 scripts/tune/list_batch.py --device nvidia --n 4194304 --gib 2 4 8 0 --steps 8 --rounds 2
py memory 240 scripts/bench/run_memory.py --device nvidia --n 1048576 4194304 16777216 67108864 134217728 --steps 4 \
    --timeout 120
