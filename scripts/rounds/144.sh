# round 144: issue 56, session 35: memory and speed against N with float32 velocities (memory.velocities =
# "float32", 12 B a particle less), 2^20 ... 2^30: each N a process of its own, memory by owner against the plan
# and nvidia-smi, the step by the caller's clock, the force error on sampled sinks against float64 direct sums
# (torch, after the run's memory is freed); 1000 sinks up to 2^28, 500 at 2^30
code new
py ladder 300 scripts/bench/billion.py --device nvidia --n 1048576 4194304 16777216 67108864 268435456 \
    --steps 8 --sample 1000 --set memory.velocities=float32 --timeout 150 --json "$O/ladder.json"
py billion_2e30 480 scripts/bench/billion.py --device nvidia --n 1073741824 --steps 8 --sample 500 \
    --set memory.velocities=float32 --timeout 420 --json "$O/billion_2e30.json"
