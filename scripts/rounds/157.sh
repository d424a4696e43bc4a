# round 157: issue 57, session 37: the fronts with this session's code (the set-up's cheaper checks, a
# multi-type report's sums and radii in one pass), M31 at 2^22 at the default α and a tenth of it, the cusp
# at 2^22; where a run's wall goes, 9c25a24 (build/old) against this code, alternating; the reductions'
# tests on the GPU
HYBRIDTREE_DEVICE=nvidia py pytest_gpu 90 -m pytest -q -m gpu -p no:cacheprovider -n 0 --tb=line \
    tests/device/test_reduce.py tests/device/test_reduce_sets.py tests/integrate/test_type_sums.py
k=0
for v in old new old new; do code $v
  HYBRIDTREE_DEVICE=nvidia py costs_$v$((++k)) 80 scripts/tune/run_costs.py m31 --device nvidia --n 4194304 \
      --how block:0.8 --top 0 --json "$O/costs_$v$k.json"
done
code new
HYBRIDTREE_DEVICE=nvidia py pareto_m31_a3 170 scripts/bench/pareto.py m31 --device nvidia --n 4194304 --seed 2 \
    --set gravity.alpha=0.0003 --eta 0.8 0.4 0.2 --shared 2 3 4 --ref 5 \
    --json "$O/m31_a3.jsonl" --plot "$O/m31_a3.png"
HYBRIDTREE_DEVICE=nvidia py pareto_m31 150 scripts/bench/pareto.py m31 --device nvidia --n 4194304 --seed 2 \
    --eta 0.8 0.4 0.2 --shared 2 3 4 --ref 5 --json "$O/m31.jsonl" --plot "$O/m31.png"
