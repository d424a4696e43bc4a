# round 106: issue 30, session 28: with PACK_UNION, where relative walks in groups of 256 start to pay: the walk at 2^18 .. 2^21,
# whole runs at 2^20 and 2^21 in groups of 128 (the default there then) and 256, alternating
py relative 150 scripts/tune/relative.py --device nvidia --n 262144 524288 2097152 --theta 0.5 --alpha 0.003 \
    --n-group 128 256
for i in 1 2; do for g in 128 256; do
  py runs_g${g}_$i 120 scripts/bench/step.py runs --device nvidia --n 1048576 2097152 --schemes plain-mono --steps 32 \
      --diag-every 8 --set gravity.n_group=$g
done; done
