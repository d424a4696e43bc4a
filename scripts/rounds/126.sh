# round 126: issues 55-56, session 31: one force with quadrupoles (the far-particle kernels' d/r form) new against
# a98ebd6 (build/old); the device memory of runs with the defaults by owner (the ledger) beside nvidia-smi, 2^20 ... 2^27
for v in new old; do code $v
  py quad_$v 60 scripts/bench/force.py --device nvidia --n 4194304 16777216 --direct-n --multipole quadrupole --repeat 3
done
code new
py memory 300 scripts/bench/run_memory.py --device nvidia --n 1048576 4194304 16777216 67108864 134217728 --steps 4 \
    --timeout 150
