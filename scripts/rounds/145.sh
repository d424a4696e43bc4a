# round 145: sessions 35's merged code (kept keys and rows below 2^28, float32 velocities as an option, the block
# substep's one-kernel end on GPUs) against 3a9ae01 (build/old, session 34's end): the snapshots of
# tools/same_snapshots.py bit for bit on the GPU; pytest -m gpu on the changed areas; round 142's lost files
# again: a block substep by stage (old, new, new with gravity.refit_fraction 1) and M31's block runs per refit budget
code old
py snaps_old 110 tools/same_snapshots.py record "$O/snaps_old.json" --device nvidia
code new
py snaps_new 110 tools/same_snapshots.py record "$O/snaps_new.json" --device nvidia
py snaps_compare 20 tools/same_snapshots.py compare "$O/snaps_old.json" "$O/snaps_new.json"
HYBRIDTREE_DEVICE=nvidia py pytest_gpu 200 -m pytest -q -m gpu -p no:cacheprovider -n 0 --tb=short \
    tests/integrate tests/gravity/test_tree_memory.py tests/device tests/run/test_plan.py \
    tests/run/test_plan_vel32.py tests/run/test_run_vel32.py tests/ics/test_rows.py
export HYBRIDTREE_DEVICE=nvidia
code old
py substeps_old 45 scripts/tune/block_substeps.py --device nvidia --n 4194304 --json "$O/substeps_old.json"
code new
py substeps_new 45 scripts/tune/block_substeps.py --device nvidia --n 4194304 --json "$O/substeps_new.json"
py substeps_new_refit1 45 scripts/tune/block_substeps.py --device nvidia --n 4194304 \
    --set gravity.refit_fraction=1 --json "$O/substeps_new_refit1.json"
py m31_refits 100 scripts/bench/pareto.py m31 --device nvidia --n 4194304 --seed 2 --eta 0.2 \
    --refit 0.05 0.25 1 --shared 3 --ref 4 --json "$O/m31_refits.jsonl" --plot "$O/m31_refits.png"
