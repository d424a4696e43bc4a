"""A plain (non-editable) install carries the OpenCL kernels."""

import os
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]


@pytest.mark.slow
def test_plain_install_finds_kernels(tmp_path):
    target = tmp_path / "site"
    subprocess.run([sys.executable, "-m", "pip", "install", "-q", "--no-deps",
                    "--no-build-isolation", "--target", str(target), str(ROOT)],
                   check=True, cwd=tmp_path)
    assert (target / "hybridtree" / "cl" / "direct.cl").is_file()
    code = ("import hybridtree, numpy as np; from hybridtree.gravity import accelerations;"
            "assert hybridtree.__file__.startswith(%r), hybridtree.__file__;"
            "f = accelerations(np.eye(3), np.ones(3), 0.1, method='tree');"
            "print(f.acc.sum())" % str(target))
    env = {**os.environ, "PYTHONPATH": str(target)}
    out = subprocess.run([sys.executable, "-c", code], env=env, cwd=tmp_path,
                         capture_output=True, text=True)
    assert out.returncode == 0, out.stderr
    # every subpackage made it (a missing one in setup.cfg only shows up here)
    code = ("import hybridtree.run.simulation, hybridtree.io.snapshot, hybridtree.cli, hybridtree.analysis.plot, "
            "hybridtree.parallel.stepping, hybridtree.gravity.tree.device_build, hybridtree.ics.cosmological, "
            "hybridtree.analysis.halos.catalogue")
    out = subprocess.run([sys.executable, "-c", code], env=env, cwd=tmp_path,
                         capture_output=True, text=True)
    assert out.returncode == 0, out.stderr
