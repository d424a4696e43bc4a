# round 25: issue 19: the Python API on the GPU (tests, the caller's clock), the 1M config, quiet builds
HYBRIDTREE_DEVICE=nvidia py pytest_gpu 240 -m pytest -q -p no:cacheprovider tests/run/test_api.py \
    tests/device/test_build_log.py tests/test_docs_examples.py
py api 200 scripts/bench/step.py api --device nvidia --n 1048576 4194304 --steps 16
py step 150 scripts/bench/step.py runs --device nvidia --n 4194304 --schemes plain-mono --steps 16 \
    --json "$D/step.json"
py warnings 60 -W error::pyopencl.CompilerWarning -c "import numpy as np; from hybridtree.gravity \
import accelerations as a; f = a(np.random.default_rng(1).random((4096, 3)), np.ones(4096), 0.01, \
device='nvidia'); print('no CompilerWarning escaped', f.device)"
rm -rf /tmp/p1m; py plummer_1m 300 -m hybridtree run configs/plummer_1m.toml --quiet \
    --set output.dir=/tmp/p1m
cp /tmp/p1m/run.log /tmp/p1m/diagnostics.csv "$D/" 2>/dev/null; ls -la /tmp/p1m > "$D/p1m_ls.txt"
