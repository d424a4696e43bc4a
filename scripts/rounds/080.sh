# round 80: issue 30, session 24: the force errors at alpha 0.002..0.005 (monopoles on the H100, quadrupoles on the 16-core PoCL
# device at 10^5), then the walk's and the new code's tests on the GPU (round 78's)
py errors 200 -u scripts/bench/timesteps.py errors --device nvidia --n 4194304 16777216 --sample 1000 --theta 0.5 \
    --alpha 0.002 0.003 0.004 0.005 --orders monopole --json "$D/errors.json"
py pocl_errors 100 -u scripts/bench/timesteps.py errors --device cpu --n 100000 --sample 1000 --theta 0.5 \
    --alpha 0.002 0.003 0.004 0.005 --orders quadrupole --json "$D/pocl_errors.json"
HYBRIDTREE_DEVICE=nvidia py tests_gpu 250 -m pytest -q -x -p no:cacheprovider tests/gravity/test_treewalk.py \
    tests/gravity/test_eps_tree.py tests/gravity/test_opening.py tests/gravity/test_pm_slabs.py \
    tests/parallel/test_mpi_periodic.py tests/cosmo/test_box_block_steps.py
