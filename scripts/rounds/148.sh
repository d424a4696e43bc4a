# round 148: issue 56, session 36: the float32 mesh (memory.mesh = "float32", gravity/pm_compact.py) on the GPU:
# its tests and the box tests on the H200; a 256^3 box with the float64 mesh and with the float32 one (P(k) of
# both, step time, memory), and a 512^3 box with the float32 mesh and float32 velocities
code new
HYBRIDTREE_DEVICE=nvidia py pytest_box 150 -m pytest -q -p no:cacheprovider -n 0 --tb=short \
    tests/gravity/test_pm_compact.py tests/integrate/test_box_mesh32.py tests/run/test_run_vel32.py \
    tests/run/test_plan.py -k "pm_compact or mesh32 or periodic or box or float32_mesh"
py box256_f64 120 scripts/bench/box_billion.py --device nvidia --grid 256 --steps 8 --json "$O/box256_f64.json"
py box256_f32 120 scripts/bench/box_billion.py --device nvidia --grid 256 --steps 8 \
    --set memory.mesh=float32 --json "$O/box256_f32.json"
py box512_f32 180 scripts/bench/box_billion.py --device nvidia --grid 512 --steps 8 \
    --set memory.mesh=float32 --set memory.velocities=float32 --json "$O/box512_f32.json"
