# round 129: issues 55-58, session 32: the merged code (one force pipeline, the state below gravity, the memory
# plan, bounded tree/sort/reductions) against 9f66c2b (build/old, session 31's last code): the GPU tests, the
# snapshots of tools/same_snapshots.py bit for bit on the GPU, whole steps alternating new and old as round 127, and
# each run's device memory by owner beside nvidia-smi and the plan
export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1
HYBRIDTREE_DEVICE=nvidia py pytest_gpu 330 -m pytest -q -m gpu -p no:cacheprovider -n 0 --tb=short -x
code old
py snaps_old 150 tools/same_snapshots.py record "$O/snaps_old.json" --device nvidia
code new
py snaps_new 150 tools/same_snapshots.py record "$O/snaps_new.json" --device nvidia
py snaps_compare 20 tools/same_snapshots.py compare "$O/snaps_old.json" "$O/snaps_new.json"
