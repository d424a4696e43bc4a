# round 18: issue 17: cost of the diagnostics at 2^22; snapshots in the background at 2^24
py bench_diag8 120 scripts/bench/step.py runs --device nvidia --n 4194304 --schemes plain-mono \
    --steps 48 --diag-every 8 --tmp /tmp/bs --json "$D/diag8.json"
py bench_diag48 120 scripts/bench/step.py runs --device nvidia --n 4194304 --schemes plain-mono \
    --steps 48 --diag-every 48 --tmp /tmp/bs --json "$D/diag48.json"
echo "== run_snap_2e24" >> "$O/index.txt"; t0=$(date +%s)
timeout 200 python -m hybridtree run configs/plummer_1m.toml --device nvidia --overwrite \
    --set ics.n=16777216 --set time.t_end=0.0625 --set output.diag_every=8 \
    --set output.snapshot_dt=0.015625 --set gravity.multipole=monopole --set gravity.eps=0.01 \
    --set output.dir=/tmp/s24 > "$D/run_snap_2e24.txt" 2>&1
echo "   rc=$? $(( $(date +%s) - t0 )) s" >> "$O/index.txt"
cp /tmp/s24/diagnostics.csv "$D/diag_snap_2e24.csv" 2>/dev/null; ls -la /tmp/s24 > "$D/s24_ls.txt" 2>&1
