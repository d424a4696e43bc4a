# round 111: issue 30, session 29: the build finds its cube on the device (cl/prepare.cl extent_cube) instead of reading the
# extent back, against the code before (build/old: git archive 632e9b1 hybridtree cl), alternating: the build's GPU
# tests, per-kernel profile, whole runs at 2^20 and 2^22, substeps built anew and refitted, the cusp's block run
HYBRIDTREE_DEVICE=nvidia py tests_gpu 200 -m pytest -q -p no:cacheprovider tests/gravity/test_device_build.py \
    tests/gravity/test_refit.py tests/gravity/test_treewalk.py
py kernels 120 scripts/tune/kernels.py --device nvidia --n 4194304 --steps 8
for v in new1 old1 new2 old2; do code $v
  HYBRIDTREE_DEVICE=nvidia py substep_rel_$v 60 scripts/tune/substep.py 4194304 0.02 --alpha 0.003
  py runs_$v 100 scripts/bench/step.py runs --device nvidia --n 1048576 4194304 --schemes plain-mono --steps 32 \
      --diag-every 8
done
for v in new old; do code $v
  py steps_4m_$v 150 scripts/bench/timesteps.py steps --device nvidia --n 4194304 --dt 0.5 --t-end 1.0 --eta 0.2 \
      --shared-from 5 --refit-fraction 0 --json "$D/steps_4m_$v.json"
done
export PYTHONPATH=$PWD
