# round 130: issues 55-56, session 32: whole steps of the merged code against 9f66c2b (build/old) alternating as round
# 127, and the device memory of runs by owner (the ledger, the plan's prediction) beside nvidia-smi, 2^20 ... 2^27
for v in new old new2 old2; do code $v
  py runs_$v 60 scripts/bench/step.py runs --device nvidia --n 4194304 16777216 --schemes plain-mono --steps 32 \
      --diag-every 8
done
code new
py memory 260 scripts/bench/run_memory.py --device nvidia --n 1048576 4194304 16777216 67108864 134217728 --steps 4 \
    --timeout 120
