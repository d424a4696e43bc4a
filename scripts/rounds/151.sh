# round 151: issue 56, session 36: the session's code against 4002e34 (build/old, its start) on the GPU: the
# snapshots of tools/same_snapshots.py bit for bit (the default float64 mesh's boxes included); pytest -m gpu on
# the changed areas (the float32 mesh, the box ICs, the plan, the float4 state)
code old
py snaps_old 130 tools/same_snapshots.py record "$O/snaps_old.json" --device nvidia
code new
py snaps_new 130 tools/same_snapshots.py record "$O/snaps_new.json" --device nvidia
py snaps_compare 20 tools/same_snapshots.py compare "$O/snaps_old.json" "$O/snaps_new.json"
HYBRIDTREE_DEVICE=nvidia py pytest_gpu 200 -m pytest -q -m gpu -p no:cacheprovider -n 0 --tb=short \
    tests/gravity/test_pm_compact.py tests/gravity/test_pm_device.py tests/analysis/test_power_compact.py \
    tests/integrate tests/ics tests/run/test_plan.py tests/run/test_run_vel32.py tests/cosmo
