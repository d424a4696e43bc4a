# round 61 (and round 62, same commands): issue 32, session 20: a softening per particle type in the walks (PER_EPS): GPU tests; its cost in the public call at
# 2^22 and 2^24 (one softening against two per particle); GOTHIC's M31 at 2^23 for 50 Myr with the halo softened twice as much
# (62: with one softening beside).  Round 62 came after two kernel changes: the lo word read inside REL again (NVIDIA's compiler
# lost the hi/lo precision with it in a temporary: two walk tests failed in round 61) and a mixed cell opened only for groups
# softened less than its largest (MIXED_GUARD, GADGET-4's rule; round 61 opened it for all)
export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1
HYBRIDTREE_DEVICE=nvidia py pytest_gpu 280 -m pytest -q -p no:cacheprovider tests/gravity/test_eps_tree.py \
    tests/gravity/test_eps_per_particle.py tests/run/test_eps_types.py tests/gravity/test_treewalk.py \
    tests/gravity/test_device_build.py tests/gravity/test_softening.py tests/integrate/test_state.py tests/gravity/test_hybrid.py
py eps_types 150 scripts/bench/eps_types.py --device nvidia --n 4194304 16777216 --sample 40 --json "$D/eps_types.json"
[ "$R" = 62 ] && py m31_23_one 120 scripts/bench/galaxy.py configs/galaxy_m31.toml --n 8388608 --t-end 10.5 \
    --device nvidia --out /tmp/m31_23o --json "$D/m31_23_one.json"
py m31_23_eps 150 scripts/bench/galaxy.py configs/galaxy_m31.toml --n 8388608 --t-end 10.5 --device nvidia \
    --set gravity.eps_types=0.015625,0.03125 --out /tmp/m31_23e --json "$D/m31_23_eps.json"
