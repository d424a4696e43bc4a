# round 59: session 19 review: SPLIT_WEIGHT in walkcommon.cl/treewalk.cl (the spline's split weight written once): GPU tests of the walks
HYBRIDTREE_DEVICE=nvidia py pytest_gpu 300 -m pytest -q -p no:cacheprovider tests/gravity/test_softening.py \
    tests/gravity/test_treewalk.py tests/gravity/test_hybrid.py tests/gravity/test_eps_per_particle.py
