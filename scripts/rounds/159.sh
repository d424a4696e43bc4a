# round 159: issue 57, session 38: where a report's and a substep's time goes on the H200 (kernels by device
# time), then M31 at 2^22 over ten times the span (to t = 105: block η 0.8 0.4 0.2, shared Δt/4 Δt/8, the
# converged run Δt/16)
HYBRIDTREE_DEVICE=nvidia py report_costs 60 scripts/tune/report_costs.py --device nvidia --n 4194304 \
    --reports 10 --json "$O/report_costs.json"
HYBRIDTREE_DEVICE=nvidia py substeps 90 scripts/tune/block_substeps.py --device nvidia --n 4194304 \
    --kernels 12 --json "$O/substeps.json"
HYBRIDTREE_DEVICE=nvidia py pareto_m31_long 440 scripts/bench/pareto.py m31 --device nvidia --n 4194304 \
    --seed 2 --long --eta 0.8 0.4 0.2 --shared 2 3 --ref 4 --json "$O/m31_long.jsonl" --plot "$O/m31_long.png"
