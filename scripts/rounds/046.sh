# round 46: issue 31, session 16: periodic forces by TreePM (the PERIODIC walk on the GPU, host mesh): GPU tests and timings
export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1
HYBRIDTREE_DEVICE=nvidia py pytest_gpu 300 -m pytest -q -p no:cacheprovider tests/gravity/test_periodic.py tests/gravity/test_treewalk.py tests/tools/test_vendor_compile.py
py periodic 400 scripts/bench/periodic.py --device nvidia --n 262144 2097152 16777216 --rcut 4.5 7.0 --theta 0.5 0.7
