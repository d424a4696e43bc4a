# round 160: issue 57, session 38: M31 at 2^22 over ten times the span (t = 105), block steps with the speed
# criterion (time.eta_v 16 and 8) and block steps without refits, against round 159's converged run Δt/16
# (run again here and kept for the later calls: pareto.py --ref-file) and its shared rows
P="scripts/bench/pareto.py m31 --device nvidia --n 4194304 --seed 2 --long --ref 4 --ref-file $O/ref_long.npz"
HYBRIDTREE_DEVICE=nvidia py long_v16 300 $P --eta 0.8 0.4 --set time.eta_v=16 --shared --json "$O/long_v16.jsonl"
HYBRIDTREE_DEVICE=nvidia py long_v8 120 $P --eta 0.8 --set time.eta_v=8 --shared --json "$O/long_v8.jsonl"
HYBRIDTREE_DEVICE=nvidia py long_norefit 120 $P --eta 0.8 --refit 0 --shared --json "$O/long_norefit.jsonl"
