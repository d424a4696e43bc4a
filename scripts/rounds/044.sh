# round 44: issue 30, session 15: long group walks continued in pieces (SPLIT_VISITS, PIECES; first equal parts, then octaves around the group: this version) at 2^22 and 2^24
V=""; for sv in 1024 2048 4096; do for pc in 32 48 64; do V="$V SPLIT_VISITS=$sv,PIECES=$pc"; done; done
py split_4m 300 scripts/tune/relative.py --device nvidia --n 4194304 --theta 0.5 --alpha 0.002 --variants "" $V
py split_16m 250 scripts/tune/relative.py --device nvidia --n 16777216 --theta 0.5 --alpha 0.002 --repeat 1 \
    --variants "" SPLIT_VISITS=2048,PIECES=48 SPLIT_VISITS=2048,PIECES=64 SPLIT_VISITS=4096,PIECES=64
