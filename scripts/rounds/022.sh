# round 22: issue 18: the same on the machine's 16-core PoCL CPU device (2^20 took 4.7 s a step)
py mpi_pocl 400 scripts/bench/mpi.py -n 262144 --steps 2 --device cpu --procs 1 2 4 \
    --json "$D/mpi_pocl.json"
