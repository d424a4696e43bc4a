# round 5: session 4: MPI driver, overlapped LET walks, one GPU shared by K processes (issues 5, 7)
HYBRIDTREE_DEVICE=nvidia py pytest_gpu 150 -m pytest -q -x -p no:cacheprovider tests/parallel/test_mpi.py tests/parallel/test_mpi_run.py
py mpi_pocl 100 scripts/bench/mpi.py -n 100000 --steps 2 --device cpu --procs 2 4
py mpi_pocl_overlap 100 scripts/bench/mpi.py -n 100000 --steps 2 --device cpu --procs 2 4 --overlap
py mpi_gpu 150 scripts/bench/mpi.py -n 1048576 --steps 2 --device nvidia --procs 1 2 4
echo "== run_1m" >> "$O/index.txt"; t0=$(date +%s)
timeout 80 mpiexec -n 2 python -m hybridtree run configs/plummer_1m.toml --device nvidia --quiet \
    --set time.t_end=0.03125 --set output.diag_every=4 --set output.dir="$D/run1m" \
    --set output.snapshot_files=per_process > "$D/run_1m.txt" 2>&1
echo "   rc=$? $(( $(date +%s) - t0 )) s" >> "$O/index.txt"
cp "$D/run1m/diagnostics.csv" "$D/run1m/run.log" "$D/" 2>/dev/null; rm -rf "$D/run1m"
