# round 11: session 5: radix-sort sizes on the GPU (never measured), then the force with the fastest
py tune_sort 80 scripts/tune/sort.py --device nvidia --n 4194304 16777216 --tuning 256,16,8,4 \
    128,16,8,4 256,8,8,4 256,16,8,5 128,32,8,6 128,16,8,6 64,32,8,8 64,16,8,8 32,64,8,8
best=$(grep "N=  4194304" "$D/tune_sort.txt" | grep "order ok" | sort -k4 -g | head -1 | awk '{print $3}')
echo "best sort tuning at 2^22: $best" >> "$O/index.txt"
HYBRIDTREE_SORT_TUNING=$best py grav_sort 90 scripts/bench/force.py --device nvidia \
    --n 4194304 16777216 --direct-n --phases --repeat 3
