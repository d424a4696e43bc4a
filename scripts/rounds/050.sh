# round 50: issue 31, session 18: periodic boxes on many processes (mesh summed over processes, periodic LET): GPU tests; 128^3 on 1 and 2 processes sharing the H100, P(k) of both
export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1
HYBRIDTREE_DEVICE=nvidia py pytest_gpu 300 -m pytest -q -p no:cacheprovider tests/parallel/test_mpi_periodic.py \
    tests/cosmo/test_periodic_box.py tests/gravity/test_periodic.py tests/gravity/test_pm_device.py tests/parallel/test_let_device.py
for k in 1 2; do
  echo "== box128_k$k" >> "$O/index.txt"; t0=$(date +%s.%N)
  timeout 300 mpiexec -n $k python -m hybridtree run configs/cosmo_box.toml --device nvidia --set output.dir="$D/box128_k$k" \
      --set 'output.snapshot_files="per_process"' > "$D/box128_k$k.txt" 2>&1
  echo "   rc=$? wall $(python3 -c "import time; print(round(time.time() - $t0, 1))") s" >> "$O/index.txt"
  py pk128_k$k 60 -m hybridtree pk "$(ls "$D"/box128_k$k/snapshot_0003*.hdf5 | head -1)" --out "$D/pk128_k${k}_z0.txt"
  cp "$D/box128_k$k/diagnostics.csv" "$D/box128_k${k}_diagnostics.csv"; rm -f "$D"/box128_k$k/snapshot_*.hdf5
done
