# round 4
HYBRIDTREE_DEVICE=nvidia py pytest_gpu 200 -m pytest -q -x -p no:cacheprovider tests/gravity/test_hybrid.py \
    tests/gravity/test_device_build.py -k "on_device or restart or list_walk or upload or n_hard"
py hybrid_1m 120 scripts/bench/step.py hybrid --n 1000000 --device nvidia --t-end 0.0625 --json
py hybrid_1m_host 120 scripts/bench/step.py hybrid --n 1000000 --device nvidia --t-end 0.0625 --json --host-steps
py hybrid_1m_quad 120 scripts/bench/step.py hybrid --n 1000000 --device nvidia --t-end 0.0625 --json --multipole quadrupole
py hybrid_4m 150 scripts/bench/step.py hybrid --n 4194304 --device nvidia --t-end 0.0625 --json
py hybrid_100k 60 scripts/bench/step.py hybrid --n 100000 --device nvidia --t-end 0.125 --json
py mpi_pocl 200 scripts/bench/mpi.py -n 100000 --steps 2 --device cpu
