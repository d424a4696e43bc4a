# round 134: issues 55-58, session 33: the merged code (compact state, tree and walk memory, the parallel API
# through the driver, the AMUSE code, P(k) shells on the device, FoF's serial parts) against 3dae039 (build/old,
# session 32's last code): the GPU tests of what changed; the snapshots of tools/same_snapshots.py bit for bit on
# the GPU; whole steps new against old; `hybridtree pk` and `hybridtree halos` of a 256^3 box at z = 0 by the
# caller's clock, new against old, with the new code's breakdown
export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1
HYBRIDTREE_DEVICE=nvidia py pytest_gpu 110 -m pytest -q -m gpu -p no:cacheprovider -n 0 --tb=short \
    tests/integrate tests/gravity/test_tree_memory.py tests/gravity/test_walk_memory.py tests/gravity/test_refit.py \
    tests/device tests/analysis tests/run/test_plan.py
code old
py snaps_old 90 tools/same_snapshots.py record "$O/snaps_old.json" --device nvidia
code new
py snaps_new 90 tools/same_snapshots.py record "$O/snaps_new.json" --device nvidia
py snaps_compare 20 tools/same_snapshots.py compare "$O/snaps_old.json" "$O/snaps_new.json"
for v in new old; do code $v
  py runs_$v 45 scripts/bench/step.py runs --device nvidia --n 4194304 16777216 --schemes plain-mono --steps 32 \
      --diag-every 8
done
code new
py box256 120 -m hybridtree run configs/cosmo_box.toml --device nvidia --set ics.n_grid=256 \
    --set gravity.eps=$(python3 -c "print(100 / 0.7 / 256 / 30)") --set output.dir="$D/box256"
HYBRIDTREE_DEVICE=nvidia py analysis_new 80 scripts/bench/analysis.py "$D/box256/snapshot_0003.hdf5" --repeat 2 \
    --breakdown
code old
HYBRIDTREE_DEVICE=nvidia py analysis_old 60 scripts/bench/analysis.py "$D/box256/snapshot_0003.hdf5" --repeat 1
rm -rf "$D/box256"
