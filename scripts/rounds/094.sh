# round 94: issue 30, session 26: the relative list walk's cooperative width on the H200 (COOP 8, 16, 32 = the default, 64)
py rate_coop 300 scripts/tune/relative.py --device nvidia --n 4194304 16777216 --theta 0.5 --alpha 0.003 \
    --variants "" COOP=8 COOP=16 COOP=64
