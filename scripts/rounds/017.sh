# round 17: issue 17: the other schemes, 2^20, 2^26, and the largest run that steps (cold sphere, 2^27)
py bench_step 330 scripts/bench/step.py runs --device nvidia --n 1048576 4194304 16777216 \
    --schemes plain-quad hybrid-quad --tmp /tmp/bs --json "$D/bench_step2.json"
py bench_step_small 60 scripts/bench/step.py runs --device nvidia --n 1048576 \
    --schemes plain-mono hybrid-mono --tmp /tmp/bs --json "$D/bench_step3.json"
(nvidia-smi --query-gpu=memory.used --format=csv,noheader,nounits -lms 200 > "$D/mem_trace.txt" 2>&1 &)
echo "== run_2e27" >> "$O/index.txt"; t0=$(date +%s)
timeout 240 python -m hybridtree run configs/plummer_1m.toml --device nvidia --quiet --overwrite \
    --set ics.kind=cold_sphere --set ics.n=134217728 --set time.t_end=0.0078125 \
    --set time.dt=0.001953125 --set output.diag_every=1 --set output.snapshot_dt=0.0078125 \
    --set gravity.multipole=monopole --set gravity.eps=0.01 --set output.dir=/tmp/r27 > "$D/run_2e27.txt" 2>&1
echo "   rc=$? $(( $(date +%s) - t0 )) s" >> "$O/index.txt"
pkill -f "nvidia-smi --query"; sort -n "$D/mem_trace.txt" | tail -1 > "$D/mem_max.txt"
cp /tmp/r27/diagnostics.csv "$D/diag_2e27.csv" 2>/dev/null; ls -la /tmp/r27 > "$D/r27_ls.txt" 2>&1
