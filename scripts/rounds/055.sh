# round 55: issue 32, session 19: particle types and galaxies on the GPU: tests; GOTHIC's M31 model with block steps, 2^23 for 50 Myr (wall per smallest step)
export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1
HYBRIDTREE_DEVICE=nvidia py pytest_gpu 240 -m pytest -q -p no:cacheprovider tests/run/test_particle_types.py \
    tests/integrate/test_state.py tests/ics/test_galaxy.py tests/parallel/test_mpi_run.py
py m31_23_short 280 scripts/bench/galaxy.py configs/galaxy_m31.toml --n 8388608 --t-end 10.5 --device nvidia \
    --out /tmp/m31_23 --json "$D/m31_23_short.json"
