# round 124: issue 30, session 30: whole runs of the final code against 8d4d9e2 (build/old), the comparison of rounds 121/122
# done again now that step.py's children import build/old (before 1e9b515 the 'old' runs ran the checkout)
for v in new old; do code $v
  py runs_$v 80 scripts/bench/step.py runs --device nvidia --n 4194304 16777216 --schemes plain-mono --steps 32 \
      --diag-every 8
done
export PYTHONPATH=$PWD
