# round 131: issues 56-58, session 32: each run's device memory by owner (the ledger, the plan's prediction) beside
# nvidia-smi, 2^20 ... 2^27; P(k) and FoF of a 256^3 box at z = 0 by the caller's clock (`hybridtree pk`, `halos`),
# the merged code against 9f66c2b (build/old); the cusp's block against shared steps at 2^22 (scripts/bench/pareto.py)
export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1
py memory 200 scripts/bench/run_memory.py --device nvidia --n 1048576 4194304 16777216 67108864 134217728 --steps 4 \
    --timeout 90
py box256 150 -m hybridtree run configs/cosmo_box.toml --device nvidia --set ics.n_grid=256 \
    --set gravity.eps=$(python3 -c "print(100 / 0.7 / 256 / 30)") --set output.dir="$D/box256"
for v in new old; do code $v
  HYBRIDTREE_DEVICE=nvidia py analysis_$v 110 scripts/bench/analysis.py "$D/box256/snapshot_0003.hdf5" --repeat 1
done
code new
rm -rf "$D/box256"
py pareto_cusp 110 scripts/bench/pareto.py cusp --device nvidia --n 4194304 --eta 0.2 0.1 --shared 3 4 --ref 6 \
    --set time.eta_v=0 --json "$O/pareto_cusp.jsonl" --plot "$O/pareto_cusp.png"
