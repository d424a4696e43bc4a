# round 161: issue 57, session 38: M31 at 2^22 over ten times the span (t = 105): the energy drifts with the
# bulk's step (round 160), so block runs whose largest step is Δt/2 and Δt/4 (--block-k 1 2, η 0.8 0.4),
# against the converged run Δt/16 (kept: --ref-file) and round 159's shared rows
P="scripts/bench/pareto.py m31 --device nvidia --n 4194304 --seed 2 --long --ref 4 --ref-file $O/ref_long.npz"
HYBRIDTREE_DEVICE=nvidia py long_k12 420 $P --eta 0.8 0.4 --block-k 1 2 --shared --json "$O/long_k12.jsonl"
