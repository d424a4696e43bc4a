# round 115: issue 30, session 29: the build's two counts really read in one wait (read_counts: a dropped pyopencl event of a
# copy to the host waited too), walk_active's two counts likewise, the bins' counts in one wait; against 632e9b1
# (build/old), alternating, and the GPU tests of what changed
HYBRIDTREE_DEVICE=nvidia py tests_gpu 200 -m pytest -q -p no:cacheprovider --tb=short tests/integrate/test_state.py \
    tests/gravity/test_device_build.py tests/device/test_transfer.py tests/integrate/test_timesteps.py
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
