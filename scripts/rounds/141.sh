# round 141: issue 56, session 34: 2^30 = 1 073 741 824 Plummer particles on one H200: the run draws its sphere
# block by block into the device state, steps 1 + 8 steps; memory by owner against the plan and nvidia-smi;
# the force error on 500 sampled sinks against float64 direct sums (torch, after the run's memory is freed)
code new
py billion_2e30 560 scripts/bench/billion.py --device nvidia --n 1073741824 --steps 8 --sample 500 \
    --timeout 420 --json "$O/billion_2e30.json"
