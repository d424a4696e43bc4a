# round 135: issue 56, session 33: each run's device memory by owner (the ledger, the plan's prediction) beside
# nvidia-smi, 2^20 ... 2^27, and the largest Plummer run yet on one H200: 2^29 = 536 870 912 particles, 8 steps
py memory 150 scripts/bench/run_memory.py --device nvidia --n 1048576 4194304 16777216 67108864 134217728 \
    --steps 4 --timeout 60 --json "$O/memory.json"
py memory_2e29 330 scripts/bench/run_memory.py --device nvidia --n 536870912 --steps 8 --timeout 320 \
    --json "$O/memory_2e29.json"
