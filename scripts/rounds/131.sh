# round 131: issues 55-58, session 32: whole steps new against 9f66c2b (build/old) after the reductions' fused
# levels were kept off GPUs (round 130: the run's reduce phase 3.1 -> 3.9 ms at 2^24); each run's device memory by
# owner (the ledger, the plan's prediction) beside nvidia-smi, 2^20 ... 2^27; P(k) and FoF of a 256^3 box at z = 0
# by the caller's clock (`hybridtree pk`, `hybridtree halos`), new against old
export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1
for v in new old; do code $v
  py runs_$v 50 scripts/bench/step.py runs --device nvidia --n 4194304 16777216 --schemes plain-mono --steps 32 \
      --diag-every 8
done
code new
py memory 190 scripts/bench/run_memory.py --device nvidia --n 1048576 4194304 16777216 67108864 134217728 --steps 4 \
    --timeout 80
py box256 130 -m hybridtree run configs/cosmo_box.toml --device nvidia --set ics.n_grid=256 \
    --set gravity.eps=$(python3 -c "print(100 / 0.7 / 256 / 30)") --set output.dir="$D/box256"
for v in new old; do code $v
  HYBRIDTREE_DEVICE=nvidia py analysis_$v 100 scripts/bench/analysis.py "$D/box256/snapshot_0003.hdf5" --repeat 1
done
