# round 58: issue 32, session 19: a softening per particle in the direct kernel (PER_EPS): GPU tests
HYBRIDTREE_DEVICE=nvidia py pytest_gpu 240 -m pytest -q -p no:cacheprovider tests/gravity/test_eps_per_particle.py \
    tests/gravity/test_direct.py tests/gravity/test_softening.py
