# round 20: issue 18: fewer waits in the LET selection; K processes alone on the GPU; 16-core CPU device
py mpi_2e22 240 scripts/bench/mpi.py -n 4194304 --steps 3 --device nvidia --procs 1 2 4 \
    --json "$D/mpi_2e22.json"
py mpi_2e22_overlap 100 scripts/bench/mpi.py -n 4194304 --steps 3 --device nvidia --procs 4 \
    --overlap --json "$D/mpi_2e22_overlap.json"
