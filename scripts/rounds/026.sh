# round 26: issue 19: the Python API again (O(N) caller order, one report per call); quiet builds
py api 200 scripts/bench/step.py api --device nvidia --n 1048576 4194304 16777216 --steps 16
py warnings 60 -c "import warnings, numpy as np, pyopencl; warnings.simplefilter('error', \
pyopencl.CompilerWarning); from hybridtree.gravity import accelerations as a; \
f = a(np.random.default_rng(1).random((4096, 3)), np.ones(4096), 0.01, device='nvidia', \
method='direct'); g = a(np.random.default_rng(1).random((4096, 3)), np.ones(4096), 0.01, \
device='nvidia'); print('no CompilerWarning escaped', f.device)"
