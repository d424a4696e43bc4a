# round 152: issue 56, session 36: the whole step at 2^22 and 2^24 (the defaults), the session's code (new)
# against 4002e34 (build/old, its start), alternating
k=0
for v in new old new old; do code $v
  py runs_$v$((++k)) 60 scripts/bench/step.py runs --device nvidia --n 4194304 16777216 --schemes plain-mono \
      --steps 32 --diag-every 8
done
