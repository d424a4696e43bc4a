# round 127: issues 55-56, session 31: the final code (list batches of at most 8 GiB, the pinned staging area a ring
# of 16 chunks entered in the ledger): the device tests, whole runs against a98ebd6 (build/old) alternating as round
# 124, and the device memory of runs by owner (the ledger) beside nvidia-smi, 2^20 ... 2^27
HYBRIDTREE_DEVICE=nvidia py tests_gpu 150 -m pytest -q -p no:cacheprovider -n 0 --tb=short tests/device \
    tests/gravity/test_list_batches.py tests/gravity/test_far_particles.py
for v in new old new2 old2; do code $v
  py runs_$v 60 scripts/bench/step.py runs --device nvidia --n 4194304 16777216 --schemes plain-mono --steps 32 \
      --diag-every 8
done
code new
py memory 200 scripts/bench/run_memory.py --device nvidia --n 1048576 4194304 16777216 67108864 134217728 --steps 4 \
    --timeout 100
