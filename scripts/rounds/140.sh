# round 140: issues 55/56, session 34: the merged code with the lists kept below 2^28 particles against acf8aa7
# (build/old): the snapshots of tools/same_snapshots.py bit for bit on the GPU; whole steps alternating;
# billion.py's rows at 2^20 ... 2^26; the GPU tests of what changed
export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1
code old
py snaps_old 100 tools/same_snapshots.py record "$O/snaps_old.json" --device nvidia
code new
py snaps_new 100 tools/same_snapshots.py record "$O/snaps_new.json" --device nvidia
py snaps_compare 20 tools/same_snapshots.py compare "$O/snaps_old.json" "$O/snaps_new.json"
k=0
for v in new old new old; do code $v
  py runs_$v$((++k)) 45 scripts/bench/step.py runs --device nvidia --n 4194304 16777216 --schemes plain-mono \
      --steps 32 --diag-every 8
done
code new
py billion 120 scripts/bench/billion.py --device nvidia --n 1048576 4194304 16777216 67108864 --steps 8 \
    --sample 1000 --timeout 100 --json "$O/billion.json"
HYBRIDTREE_DEVICE=nvidia py pytest_gpu 170 -m pytest -q -m gpu -p no:cacheprovider -n 0 --tb=short \
    tests/integrate tests/gravity/test_tree_memory.py tests/gravity/test_walk_memory.py \
    tests/gravity/test_list_batches.py tests/device tests/analysis/test_halos_device.py tests/run/test_plan.py \
    tests/ics/test_rows.py
