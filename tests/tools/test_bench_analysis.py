"""scripts/bench/analysis.py --breakdown: each command's caller-clock line, then one line
of its stages (wall and CPU seconds) from scripts/bench/analysis_breakdown.py."""

from __future__ import annotations

import json
import os
import subprocess
import sys

from tests.cli.test_pk import BOX, wave, write_gadget
from tests.helpers import ROOT


def test_pk_breakdown_names_its_stages(tmp_path):
    snap = tmp_path / "snapshot_0001.hdf5"
    write_gadget(snap, wave(), BOX)
    r = subprocess.run([sys.executable, str(ROOT / "scripts" / "bench" / "analysis.py"),
                        str(snap), "--repeat", "1", "--only", "pk", "--mesh", "16",
                        "--breakdown"], capture_output=True, text=True, timeout=600,
                       env={**os.environ, "PYTHONPATH": str(ROOT)}, cwd=tmp_path)
    assert r.returncode == 0, r.stderr
    timed, stages = [json.loads(line) for line in r.stdout.splitlines()]
    assert timed["command"] == "pk" and timed["seconds"] > 0
    assert "mesh 16^3" in timed["output"]
    wall, cpu = stages["stages_s"], stages["stages_cpu_s"]
    assert {"import", "read snapshot", "device context", "write table"} <= set(wall)
    assert set(cpu) == set(wall) and stages["process_s"] >= wall["import"]
