# round 24: issue 18: hard substeps with the hard LET as a second tree (default) against merged
py mpi_2e22 150 scripts/bench/mpi.py -n 4194304 --steps 3 --device nvidia --procs 1 2 4 \
    --json "$D/mpi_2e22.json"
py mpi_2e22_merged 120 scripts/bench/mpi.py -n 4194304 --steps 3 --device nvidia --procs 2 4 \
    --hard-tree merged --json "$D/mpi_2e22_merged.json"
