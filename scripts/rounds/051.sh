# round 51: session 18: GADGET's spline softening (cl/softening.cl): GPU tests of the force kernels; the public call's cost against Plummer at 2^20-2^24, tree and direct
export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1
HYBRIDTREE_DEVICE=nvidia py pytest_gpu 300 -m pytest -q -p no:cacheprovider tests/gravity/test_softening.py \
    tests/gravity/test_treewalk.py tests/gravity/test_direct.py tests/gravity/test_periodic.py tests/gravity/test_hybrid.py
for s in plummer spline; do
  py force_$s 200 scripts/bench/force.py --device nvidia --n 1048576 4194304 16777216 --direct-n 1048576 \
      --softening $s --json "$D/force_$s.json"
done
