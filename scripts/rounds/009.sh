# round 9: session 5: the direct kernel on PoCL 5 (an abort in round 8), the H100's direct row at 2^20
echo "== pocl_build" >> "$O/index.txt"; bash scripts/tune/check_pocl_build.sh > "$D/pocl_build.txt" 2>&1
py grav_pocl 120 scripts/bench/force.py --device cpu --n 1048576 --direct-n 65536 --phases --repeat 1
py grav_direct 150 scripts/bench/force.py --device nvidia --n 16777216 --n-group 256 --direct-n 1048576 \
    --phases --repeat 2 --sample 300
