# round 100: issue 30, session 27, final code: the host's share of a launch (HYBRIDTREE_CL_OPTIONS read once per runtime, the
# sort's kernel checks once per tuning, cell_moments' arguments made once) against the code before it (build/old: git
# archive dada24b hybridtree cl), alternating: substeps (geometric 0.1 % and 2 %, relative 2 %, and 2 % of 2^16, where
# the host sets the pace), whole runs at 2^22, a cusp's block run against shared steps
for v in new old new old; do code $v
  for f in 0.001 0.02; do HYBRIDTREE_DEVICE=nvidia py substep_${f}_$v 60 scripts/tune/substep.py 4194304 $f; done
  HYBRIDTREE_DEVICE=nvidia py substep_rel_0.02_$v 60 scripts/tune/substep.py 4194304 0.02 --alpha 0.003
  HYBRIDTREE_DEVICE=nvidia py substep_small_$v 60 scripts/tune/substep.py 65536 0.02 20
  py runs_$v 120 scripts/bench/step.py runs --device nvidia --n 4194304 --schemes plain-mono --steps 32 --diag-every 8
done
for v in new old; do code $v
  py steps_4m_$v 150 scripts/bench/timesteps.py steps --device nvidia --n 4194304 --dt 0.5 --t-end 1.0 --eta 0.2 \
      --shared-from 5 --refit-fraction 0 --json "$D/steps_4m_$v.json"
done
export PYTHONPATH=$PWD
