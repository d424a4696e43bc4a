#!/usr/bin/env bash
# Does the direct kernel build and run on the CPU OpenCL device in each form?  One process
# per form: a kernel compiler that aborts (PoCL 5 did on SELF_BRANCH=1, session 5) takes
# only that one down.  Run from the repository root with PYTHONPATH=.
for defs in "SELF_BRANCH=0 NI=1" "SELF_BRANCH=0 NI=2" "SELF_BRANCH=1 NI=1"; do
  python - $defs <<'PY'
import sys
import numpy as np
from hybridtree.gravity.direct import direct_forces
from hybridtree.gravity import direct_reference
from hybridtree.device.choice import get_runtime
opts = {k: int(v) for k, v in (a.split("=") for a in sys.argv[1:])}
rt = get_runtime("cpu")
pos = np.random.default_rng(1).normal(size=(3000, 3))
m = np.ones(3000) / 3000
acc, _, _ = direct_forces(rt, pos, m, pos, 0.01, True, 64, True, opts)
ref, _ = direct_reference(pos, m, 0.01)
print(rt.info.label, opts, "max err", float(np.abs(acc - ref).max() / np.abs(ref).max()))
PY
  echo "  rc=$?"
done
