# round 137: issue 56, session 34: scripts/bench/billion.py on the code before this session's memory
# cuts (3362489): a config's Plummer sphere at 2^24 and 2^28, memory by owner, step, force error
# on 1000 sampled sinks against float64 direct sums (torch, CUDA)
py billion_old 580 scripts/bench/billion.py --device nvidia --n 16777216 268435456 --steps 8 \
    --sample 1000 --timeout 400 --json "$O/billion_old.json"
