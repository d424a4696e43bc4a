# round 131: issues 57-58, session 32: P(k) and FoF of a 256^3 box at z = 0 by the caller's clock (`hybridtree pk`,
# `hybridtree halos`), the merged code against 9f66c2b (build/old); the cusp's block against shared steps at 2^22
# at equal accuracy (scripts/bench/pareto.py), without and with time.eta_v = 2
export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1
py box256 200 -m hybridtree run configs/cosmo_box.toml --device nvidia --set ics.n_grid=256 \
    --set gravity.eps=$(python3 -c "print(100 / 0.7 / 256 / 30)") --set output.dir="$D/box256"
for v in new old new2; do code $v
  HYBRIDTREE_DEVICE=nvidia py analysis_$v 130 scripts/bench/analysis.py "$D/box256/snapshot_0003.hdf5" --repeat 1
done
code new
rm -rf "$D/box256"
py pareto_cusp 150 scripts/bench/pareto.py cusp --device nvidia --n 4194304 --eta 0.2 0.1 0.05 --shared 3 4 5 --ref 6 \
    --json "$O/pareto_cusp.jsonl" --plot "$O/pareto_cusp.png"
py pareto_cusp_etav 90 scripts/bench/pareto.py cusp --device nvidia --n 4194304 --eta 0.2 0.1 --shared 3 --ref 6 \
    --set time.eta_v=2 --json "$O/pareto_cusp_etav.jsonl"
