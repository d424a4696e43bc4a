# round 147: issue 56, session 35: near the plan's largest N for an H200 with float32 velocities (1 256 194 048):
# 1.2e9 Plummer particles, 1 + 8 steps, memory against the plan and nvidia-smi, the force error on 200 sinks
code new
py billion_1p2e9 480 scripts/bench/billion.py --device nvidia --n 1200000000 --steps 8 --sample 200 \
    --set memory.velocities=float32 --timeout 440 --json "$O/billion_1p2e9.json"
