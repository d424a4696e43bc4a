# round 132: issues 55-58, session 32: the GPU tests of what changed after round 130 (tests/device: the reductions'
# levels apart on GPUs, the build log; the driver-order test), and `hybridtree pk` of a 256^3 box at z = 0 twice
# (the second with the kernels in the build cache), new against 9f66c2b (build/old)
HYBRIDTREE_DEVICE=nvidia py pytest_gpu 150 -m pytest -q -p no:cacheprovider -n 0 --tb=short tests/device \
    tests/gravity/test_tuning.py tests/gravity/test_tree_memory.py
py box256 130 -m hybridtree run configs/cosmo_box.toml --device nvidia --set ics.n_grid=256 \
    --set gravity.eps=$(python3 -c "print(100 / 0.7 / 256 / 30)") --set output.dir="$D/box256"
for v in new old; do code $v
  HYBRIDTREE_DEVICE=nvidia py pk_$v 60 scripts/bench/analysis.py "$D/box256/snapshot_0003.hdf5" --repeat 2 --only pk
done
rm -rf "$D/box256"
