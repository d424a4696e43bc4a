# round 19: issue 18: device LET and migration under mpiexec on one H100 (2^22, K = 1, 2, 4)
HYBRIDTREE_DEVICE=nvidia py pytest_gpu 150 -m pytest -q -p no:cacheprovider \
    tests/parallel/test_let_device.py tests/parallel/test_mpi.py -k "device or same_input or three"
py mpi_2e22 240 scripts/bench/mpi.py -n 4194304 --steps 3 --device nvidia --procs 1 2 4 \
    --json "$D/mpi_2e22.json"
py mpi_2e22_overlap 150 scripts/bench/mpi.py -n 4194304 --steps 3 --device nvidia --procs 2 4 \
    --overlap --json "$D/mpi_2e22_overlap.json"
