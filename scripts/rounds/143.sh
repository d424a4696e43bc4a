# round 143: issue 55/56, session 35: the 2^22 step 7 % slower since session 34 (0.0177-0.0187 s against
# 0.0171/0.0169): the build's sorted keys and the GPU reductions' level-1 rows, made and freed each step since
# session 34, kept again below WalkTuning.lists_apart's 2^28 particles.  New (the working tree) against old
# (build/old: 3a9ae01, session 34's end) and base (build/base: acf8aa7, session 34's start), alternating.
k=0
for v in new old base new old base; do code $v
  py runs_$v$((++k)) 60 scripts/bench/step.py runs --device nvidia --n 4194304 16777216 --schemes plain-mono \
      --steps 32 --diag-every 8
done
