"""``hybridtree pk`` and ``hybridtree halos`` start light (issue 58): they import their
analysis, not the run's machinery (hybridtree.run.simulation: integrators, scipy.integrate,
about a second of every start), and still write what they wrote."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

import hybridtree
from tests.cli.test_pk import BOX, wave, write_gadget

#: the tree of the hybridtree these tests import (the command runs the same code)
ROOT = Path(hybridtree.__file__).resolve().parents[1]

#: what a command that runs nothing does not need
HEAVY = ("hybridtree.run.simulation", "hybridtree.run.guards", "hybridtree.integrate",
         "scipy.integrate")

PROBE = """
import sys
from hybridtree.cli import main
code = main(sys.argv[1:])
print("loaded:", ",".join(m for m in {heavy!r} if m in sys.modules) or "-")
print("status:", code)
"""


@pytest.mark.parametrize("command", ["pk", "halos"])
def test_pk_and_halos_do_not_import_the_run(tmp_path, command):
    snap = tmp_path / "snapshot_0001.hdf5"
    write_gadget(snap, wave(), BOX)
    argv = (["pk", str(snap), "--mesh", "16", "--out", str(tmp_path / "pk.txt")]
            if command == "pk" else
            ["halos", str(snap), "--link", "2.0", "--min-len", "2", "-o", str(tmp_path)])
    r = subprocess.run([sys.executable, "-c", PROBE.format(heavy=HEAVY), *argv],
                       cwd=tmp_path, capture_output=True, text=True, timeout=300,
                       env={**os.environ, "PYTHONPATH": str(ROOT)})
    assert r.returncode == 0, r.stderr
    assert "status: 0" in r.stdout, r.stdout + r.stderr
    assert "loaded: -" in r.stdout, r.stdout
    assert (tmp_path / ("pk.txt" if command == "pk" else "fof_tab_001.hdf5")).exists()
