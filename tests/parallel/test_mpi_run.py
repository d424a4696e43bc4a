"""``hybridtree run`` under mpiexec: parallel snapshots (one gathered file, or one file
per process), restart with any number of processes, breakdown in the diagnostics, and
errors reported once with every process stopped (MPICH from PyPI, oversubscribed)."""

import os
import subprocess
import sys
from pathlib import Path

import h5py
import numpy as np
import pytest

from tests.helpers import run_config
from hybridtree.analysis.diagnostics import read_diagnostics
from hybridtree.io.snapshot import SnapshotError, read_snapshot

from tests.helpers import ROOT, mpiexec, once_per_run

pytestmark = pytest.mark.mpi  # every test here starts processes under mpiexec

N = 800
DT = 1 / 64
CONFIG = run_config(N, 5, 0.5, 8, 4, 2, DT)


def hybridtree(k: int, args: list[str], cwd: Path) -> subprocess.CompletedProcess:
    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    cmd = [sys.executable, "-m", "hybridtree", *args]
    if k > 1:
        cmd = [mpiexec(), "-n", str(k), *cmd]
    return subprocess.run(cmd, capture_output=True, text=True, env=env, cwd=cwd, timeout=300)


def ok(proc: subprocess.CompletedProcess) -> None:
    assert proc.returncode == 0, proc.stderr[-3000:]


def by_id(path: Path) -> dict:
    s = read_snapshot(path)
    order = np.argsort(s.particles.ids)
    p = s.particles
    return {"ids": p.ids[order], "pos": p.pos[order], "vel": p.vel[order],
            "mass": p.mass[order], "time": s.time, "state": s.run_state}


@pytest.fixture(scope="module")
def three(tmp_path_factory):
    """One run on three processes, snapshots one file per process: its folder, made once
    a run for both workers (tests.helpers.once_per_run; the tests only read it)."""
    def make() -> Path:
        here = tmp_path_factory.mktemp("k3")
        (here / "c.toml").write_text(CONFIG)
        ok(hybridtree(3, ["run", "c.toml", "--set", 'output.snapshot_files="per_process"',
                          "--quiet"], here))
        return here
    return once_per_run(tmp_path_factory, "test_mpi_run.three", make)


def test_per_process_snapshots_form_a_complete_set(three):
    out = three / "out"
    names = sorted(p.name for p in out.glob("snapshot_*"))
    assert names == [f"snapshot_{n:04d}.{k}.hdf5" for n in range(3) for k in range(3)]
    counts = []
    for k in range(3):
        with h5py.File(out / f"snapshot_0002.{k}.hdf5", "r") as f:
            h = f["Header"].attrs
            assert h["NumFilesPerSnapshot"] == 3 and h["NumPart_Total"][1] == N
            counts.append(int(h["NumPart_ThisFile"][1]))
            assert len(f["PartType1/ParticleIDs"]) == counts[-1]
    assert sum(counts) == N and min(counts) > 0
    s = by_id(out / "snapshot_0002.1.hdf5")        # any part names the whole set
    assert np.array_equal(s["ids"], np.arange(1, N + 1))
    assert s["mass"].sum() == pytest.approx(1.0, rel=1e-12)
    rows = read_diagnostics(out / "diagnostics.csv")
    assert [int(r["step"]) for r in rows] == [0, 2, 4, 6, 8]
    last = rows[-1]
    assert int(last["processes"]) == 3 and float(last["imbalance"]) >= 1.0
    for col in ("t_decompose", "t_exchange", "t_let_select", "t_let_comm", "t_build",
                "t_walk", "t_integrate"):
        assert float(last[col]) > 0, col
    assert float(last["let_soft_entries"]) > 0 and float(last["let_soft_bytes"]) > 0
    assert abs(float(last["rel_energy_error"])) < 1e-3


@pytest.mark.parametrize("k", [2, 1])
def test_a_three_process_snapshot_restarts_with_k(three, k, tmp_path):
    """Restart the middle snapshot with K = 2 and 1: every particle kept once, and the
    end state agrees with the three-process run's to the tree's accuracy."""
    out = tmp_path / f"again{k}"
    ok(hybridtree(k, ["run", "--restart", str(three / "out" / "snapshot_0001.0.hdf5"),
                      "--set", f"output.dir={out}", "--quiet"], tmp_path))
    end = sorted(out.glob("snapshot_0002*"))
    assert len(end) == k          # the restart keeps the layout setting: K files
    a, b = by_id(end[0]), by_id(three / "out" / "snapshot_0002.0.hdf5")
    assert np.array_equal(a["ids"], b["ids"]) and a["time"] == b["time"] == 8 * DT
    assert a["state"]["Step"] == 8 and a["state"]["Processes"] == k
    scale = np.abs(b["pos"]).max()
    # 4 steps from the same state: only the force errors (~1e-4 relative) differ
    assert np.max(np.abs(a["pos"] - b["pos"])) < 1e-6 * scale
    assert np.max(np.abs(a["vel"] - b["vel"])) < 1e-4 * np.abs(b["vel"]).max()


def test_gathered_snapshot_equals_the_one_process_initial_state(tmp_path):
    (tmp_path / "c.toml").write_text(CONFIG.replace(f"t_end = {8 * DT}", f"t_end = {2 * DT}"))
    ok(hybridtree(2, ["run", "c.toml", "--quiet"], tmp_path))
    ok(hybridtree(1, ["run", "c.toml", "--quiet", "--set", "output.dir=one"], tmp_path))
    two, one = by_id(tmp_path / "out" / "snapshot_0000.hdf5"), by_id(
        tmp_path / "one" / "snapshot_0000.hdf5")
    assert np.array_equal(two["ids"], one["ids"])
    np.testing.assert_allclose(two["pos"], one["pos"], rtol=0, atol=1e-14)
    np.testing.assert_allclose(two["vel"], one["vel"], rtol=0, atol=1e-14)
    with h5py.File(tmp_path / "out" / "snapshot_0000.hdf5", "r") as f:
        assert f["Header"].attrs["NumFilesPerSnapshot"] == 1
        assert np.all(np.diff(f["PartType1/ParticleIDs"][...].astype(np.int64)) == 1)


def test_more_processes_than_particles_run(tmp_path):
    (tmp_path / "c.toml").write_text(CONFIG.replace(f"n = {N}", "n = 5"))
    ok(hybridtree(4, ["run", "c.toml", "--quiet", "--set", 'output.snapshot_files="per_process"'],
                  tmp_path))
    s = by_id(tmp_path / "out" / "snapshot_0002.0.hdf5")
    assert np.array_equal(s["ids"], np.arange(1, 6))
    assert np.all(np.isfinite(s["pos"]))


def test_a_set_with_a_missing_part_is_refused(three, tmp_path):
    for k in range(3):
        (tmp_path / f"snapshot_0001.{k}.hdf5").write_bytes(
            (three / "out" / f"snapshot_0001.{k}.hdf5").read_bytes())
    (tmp_path / "snapshot_0001.2.hdf5").unlink()
    with pytest.raises(SnapshotError, match="snapshot_0001.2.hdf5.*missing"):
        read_snapshot(tmp_path / "snapshot_0001.0.hdf5")
    proc = hybridtree(2, ["run", "--restart", str(tmp_path / "snapshot_0001.0.hdf5"),
                          "--set", f"output.dir={tmp_path / 'x'}"], tmp_path)
    assert proc.returncode == 2
    assert proc.stderr.count("hybridtree: error:") == 1, proc.stderr     # reported once
    assert "missing" in proc.stderr and "Traceback" not in proc.stderr
    assert not (tmp_path / "x").exists()


def test_user_errors_under_mpiexec_are_reported_once(tmp_path):
    (tmp_path / "c.toml").write_text(CONFIG)
    proc = hybridtree(2, ["run", "c.toml", "--set", "parallel.grid=3x1x1"], tmp_path)
    assert proc.returncode == 2
    assert proc.stderr.count("hybridtree: error:") == 1, proc.stderr
    assert "3 domains but 2 processes" in proc.stderr
    assert not (tmp_path / "out").exists()


def test_a_restart_point_written_twice_stays_one_complete_set(three, tmp_path):
    """SIGTERM (on process 0 only) stops two processes after step 3, then the continued
    run after step 5: each time the restart point restart.K.hdf5 is one set (one SetId,
    the step it stopped after), scheduled snapshots keep their numbers, and the run ends
    where the uninterrupted one does (the module's three-process run of the same config:
    a fourth mpiexec for a two-process reference cost ~5 s; measured 2 and 3 processes
    end 9e-7 apart, the bound 1e-5)."""
    (tmp_path / "c.toml").write_text(CONFIG)
    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    layout = ["--set", 'output.snapshot_files="per_process"', "--quiet"]

    def run(args, fault=None):
        e = {**env, "HYBRIDTREE_FAULT": fault} if fault else env
        return subprocess.run([mpiexec(), "-n", "2", sys.executable, "-m", "hybridtree",
                               *args, *layout], capture_output=True, text=True, env=e,
                              cwd=tmp_path, timeout=300)

    out = tmp_path / "out"
    for args, fault, step in ((["run", "c.toml"], "sigterm@step:3:0", 3),
                              (["run", "--restart", "out"], "sigterm@step:5:0", 5)):
        proc = run(args, fault)
        assert proc.returncode == 143, proc.stderr[-3000:]
        assert "--restart out" in proc.stderr
        sets = []
        for k in range(2):
            with h5py.File(out / f"restart.{k}.hdf5", "r") as f:
                sets.append(int(f["RunState"].attrs["SetId"]))
                assert f["RunState"].attrs["Step"] == step
        assert sets[0] == sets[1]
    ok(run(["run", "--restart", "out"]))
    names = sorted(p.name for p in out.glob("snapshot_*"))
    assert names == [f"snapshot_{n:04d}.{k}.hdf5" for n in range(3) for k in range(2)]
    for n in range(3):
        assert read_snapshot(out / f"snapshot_{n:04d}.0.hdf5").run_state["Step"] == 4 * n
    end, ref = by_id(out / "snapshot_0002.0.hdf5"), by_id(three / "out" / "snapshot_0002.0.hdf5")
    # other processes: equal to the tree's accuracy, not bit for bit
    assert np.array_equal(end["ids"], ref["ids"]) and end["time"] == ref["time"]
    np.testing.assert_allclose(end["pos"], ref["pos"], atol=1e-5)


@pytest.mark.parametrize("sets, bound", [(["time.stepping=block"], 1e-4),
                                         (["gravity.opening=relative", "gravity.alpha=0.002"],
                                          3e-5)])
def test_block_steps_and_the_relative_criterion_on_two_processes_follow_one(tmp_path, sets,
                                                                           bound):
    """Block steps (every process takes every tick, bins counted over all) and the
    relative criterion (LET cut with theta_min) on K = 2 against K = 1: the same run to
    the LET's force differences.  Measured: 3.3e-5 (block; shared steps of time.dt end
    1.3e-2 away) and 1.2e-5 (relative; the geometric run ends 5.8e-5 away)."""
    runs = {}
    for k in (1, 2):
        folder = tmp_path / f"k{k}"
        folder.mkdir()
        (folder / "run.toml").write_text(CONFIG)
        args = ["run", "run.toml", "--quiet"]
        for item in sets + ["time.dt=0.0625", "time.t_end=0.25", "output.snapshot_dt=0.125"]:
            args += ["--set", item]
        ok(hybridtree(k, args, folder))
        runs[k] = by_id(folder / "out" / "snapshot_0002.hdf5")
        if sets[0].startswith("time.stepping"):
            rows = read_diagnostics(folder / "out" / "timebins.csv")
            assert sum(int(r["particles"]) for r in rows) == N      # all processes' bins
            assert len(rows) > 1
    moved = np.abs(runs[2]["pos"] - runs[1]["pos"]).max()
    assert moved < bound, moved


def test_block_steps_refuse_the_overlapped_let_exchange(tmp_path):
    (tmp_path / "run.toml").write_text(CONFIG)
    proc = hybridtree(2, ["run", "run.toml", "--set", "time.stepping=block", "--set",
                          "parallel.overlap=true"], tmp_path)
    assert proc.returncode == 2, proc.stderr[-2000:]
    assert "parallel.overlap" in proc.stderr and "Traceback" not in proc.stderr
