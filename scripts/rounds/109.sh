# round 109: issue 30, session 29: cell_moments over each level's own cells (level_cells: ran uncommitted, then reverted, see
# docs/history.md §28), the refit's split and gather in one pass (split_gather), against the code before
# (build/old: git archive a87a3fd hybridtree cl), alternating:
# the build's GPU tests, per-kernel profile, substeps (relative 2 % and 0.1 %, geometric 2 %), whole runs at 2^22 and
# 2^24, the cusp's block run against shared steps
HYBRIDTREE_DEVICE=nvidia py tests_gpu 200 -m pytest -q -p no:cacheprovider tests/gravity/test_device_build.py \
    tests/gravity/test_refit.py
py kernels 120 scripts/tune/kernels.py --device nvidia --n 4194304 --steps 8 --sequence cell_moments
for v in new old new old; do code $v
  HYBRIDTREE_DEVICE=nvidia py substep_rel_0.02_$v 60 scripts/tune/substep.py 4194304 0.02 --alpha 0.003
  HYBRIDTREE_DEVICE=nvidia py substep_rel_0.001_$v 60 scripts/tune/substep.py 4194304 0.001 --alpha 0.003
  HYBRIDTREE_DEVICE=nvidia py substep_0.02_$v 60 scripts/tune/substep.py 4194304 0.02
  py runs_$v 100 scripts/bench/step.py runs --device nvidia --n 4194304 --schemes plain-mono --steps 32 --diag-every 8
done
for v in new old; do code $v
  py runs_24_$v 100 scripts/bench/step.py runs --device nvidia --n 16777216 --schemes plain-mono --steps 32 \
      --diag-every 8
  py steps_4m_$v 150 scripts/bench/timesteps.py steps --device nvidia --n 4194304 --dt 0.5 --t-end 1.0 --eta 0.2 \
      --shared-from 5 --refit-fraction 0 --json "$D/steps_4m_$v.json"
done
export PYTHONPATH=$PWD
