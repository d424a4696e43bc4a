"""Faults and hostile input (issue 8): killed and signalled runs, a failing MPI process,
a full disk, damaged files, numerical blow-ups, and fuzzed configs.  Faults inside a
run are injected through HYBRIDTREE_FAULT (hybridtree/faults.py)."""

import errno
import os
import random
import signal
import subprocess
import sys
import time
from pathlib import Path

import h5py
import numpy as np
import pytest

from tests.helpers import interruptible, run_config
from hybridtree.cli import main
from hybridtree.analysis.diagnostics import read_diagnostics
from hybridtree.io.snapshot import SNAPSHOT_RE, latest_snapshot, read_snapshot
from hybridtree.run.folder import latest_run_point

from tests.helpers import mpiexec, once_per_run

ROOT = Path(__file__).resolve().parents[2]
DT = 1 / 64
STEPS = 40
CONFIG = run_config(500, 9, 0.6, STEPS, 4, 4, DT)


def start(here: Path, args: list[str], fault: str | None = None, k: int = 1) -> subprocess.Popen:
    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    env.pop("HYBRIDTREE_FAULT", None)
    if fault:
        env["HYBRIDTREE_FAULT"] = fault
    cmd = [sys.executable, "-m", "hybridtree", *args]
    if k > 1:
        cmd = [mpiexec(), "-n", str(k), *cmd]
    return subprocess.Popen(cmd, cwd=here, env=env, stdout=subprocess.PIPE,
                            stderr=subprocess.PIPE, text=True, preexec_fn=interruptible)


def finish(proc: subprocess.Popen, timeout: float = 240) -> tuple[int, str]:
    _, err = proc.communicate(timeout=timeout)
    return proc.returncode, err


def final_state(folder: Path) -> dict:
    s = read_snapshot(latest_run_point(folder))
    return {"pos": s.particles.pos, "vel": s.particles.vel, "step": s.run_state["Step"]}


def complete_snapshots(folder: Path) -> list[Path]:
    """Every file under a snapshot's final name opens and holds all particles."""
    found = sorted(p for p in folder.glob("snapshot_*.hdf5") if SNAPSHOT_RE.match(p.name))
    for p in found:
        assert len(read_snapshot(p).particles) == 500, p
    return found


@pytest.fixture(scope="module")
def reference(tmp_path_factory):
    """The uninterrupted run (once a run for both workers: tests.helpers.once_per_run)."""
    def make() -> dict:
        here = tmp_path_factory.mktemp("ref")
        (here / "c.toml").write_text(CONFIG)
        rc, err = finish(start(here, ["run", "c.toml", "--quiet"]))
        assert rc == 0, err
        return final_state(here / "out")
    return once_per_run(tmp_path_factory, "test_faults.reference", make)


def restart_to_the_end(here: Path, reference: dict) -> None:
    rc, err = finish(start(here, ["run", "--restart", "out", "--quiet"]))
    assert rc == 0, err
    end = final_state(here / "out")
    assert end["step"] == STEPS
    assert np.array_equal(end["pos"], reference["pos"])       # bit for bit
    assert np.array_equal(end["vel"], reference["vel"])


@pytest.mark.slow
@pytest.mark.parametrize("seed", [1, 2, 3])
def test_sigkill_at_a_random_moment_leaves_complete_snapshots(here, reference, seed):
    proc = start(here, ["run", "c.toml", "--quiet"])
    deadline = time.time() + 120
    while not (here / "out" / "snapshot_0001.hdf5").exists() and proc.poll() is None:
        assert time.time() < deadline
        time.sleep(0.02)
    time.sleep(random.Random(seed).uniform(0.0, 0.6))      # somewhere in steps 4..40
    proc.send_signal(signal.SIGKILL)
    finish(proc)
    assert complete_snapshots(here / "out")
    restart_to_the_end(here, reference)


def test_sigkill_during_a_snapshot_write(here, reference):
    rc, _ = finish(start(here, ["run", "c.toml", "--quiet"], fault="kill@write:12"))
    assert rc == -signal.SIGKILL
    names = [p.name for p in complete_snapshots(here / "out")]
    assert names == ["snapshot_0000.hdf5", "snapshot_0001.hdf5", "snapshot_0002.hdf5"]
    assert any(p.name.startswith(".snapshot_0003") for p in (here / "out").iterdir())
    restart_to_the_end(here, reference)
    assert not any(p.name.endswith(".tmp") for p in (here / "out").iterdir())


def test_sigkill_during_a_background_snapshot_write(here, reference):
    """The snapshot of step 12 is written by a background thread; the run steps on, and
    the process is killed (from that thread) once step 13 is done and the write is
    complete but not yet renamed: only complete snapshots remain, and the restart ends
    bit for bit.  (The fault raises instead if the write blocked the run.)"""
    rc, err = finish(start(here, ["run", "c.toml", "--quiet"], fault="kill_after@write:12"))
    assert rc == -signal.SIGKILL, err
    names = [p.name for p in complete_snapshots(here / "out")]
    assert names == ["snapshot_0000.hdf5", "snapshot_0001.hdf5", "snapshot_0002.hdf5"]
    assert any(p.name.startswith(".snapshot_0003") for p in (here / "out").iterdir())
    restart_to_the_end(here, reference)
    assert not any(p.name.endswith(".tmp") for p in (here / "out").iterdir())


@pytest.mark.parametrize("sig, code", [(signal.SIGTERM, 143), (signal.SIGINT, 130)])
def test_a_signal_stops_after_the_step_with_a_restart_snapshot(here, reference, sig, code):
    proc = start(here, ["run", "c.toml", "--quiet"])
    deadline = time.time() + 120
    while not (here / "out" / "snapshot_0001.hdf5").exists():
        assert time.time() < deadline and proc.poll() is None
        time.sleep(0.01)
    proc.send_signal(sig)
    rc, err = finish(proc)
    assert rc == code, err
    assert f"stopped by {signal.Signals(sig).name} after step" in err and "--restart" in err
    assert "Traceback" not in err
    last = final_state(here / "out")
    assert 4 <= last["step"] < STEPS      # the snapshot of the step it stopped after
    log = (here / "out" / "run.log").read_text()
    assert f"{signal.Signals(sig).name} at step {last['step']}" in log
    if last["step"] % 4:        # off the schedule: the restart point, which takes no number
        assert latest_run_point(here / "out").name == "restart.hdf5"
        assert read_snapshot(latest_snapshot(here / "out")).run_state["Step"] < last["step"]
    restart_to_the_end(here, reference)
    # scheduled snapshots keep their numbers: snapshot k holds step 4 k, as uninterrupted
    names = complete_snapshots(here / "out")
    assert [p.name for p in names] == [f"snapshot_{k:04d}.hdf5" for k in range(STEPS // 4 + 1)]
    for k, p in enumerate(names):
        assert read_snapshot(p).run_state["Step"] == 4 * k, p


@pytest.mark.mpi
def test_a_failing_process_stops_all_promptly(here):
    t0 = time.time()
    rc, err = finish(start(here, ["run", "c.toml", "--quiet", "--set",
                                  'output.snapshot_files="per_process"'],
                           fault="raise@step:6:1", k=2), timeout=120)
    assert rc != 0 and time.time() - t0 < 100
    # an exception that is no user error: a bug, reported as one by the process it hit
    assert "RuntimeError: injected fault (step, step 6)" in err, err
    assert "internal error on process 1 of 2: this is a bug" in err, err
    assert "Traceback" in err and "hybridtree: error" not in err
    names = sorted(p.name for p in (here / "out").glob("snapshot_*.hdf5"))
    assert names == [f"snapshot_{n:04d}.{k}.hdf5" for n in range(2) for k in range(2)]


def test_a_full_disk_is_a_clear_error_and_keeps_earlier_snapshots(here, monkeypatch, capsys):
    """ENOSPC on the third snapshot write (as a full file system reports it)."""
    import hybridtree.io.hdf5_write as snapshot
    real, opened = h5py.File, []

    def file(name, mode="r", *a, **k):
        if mode == "w":
            opened.append(name)
            if len(opened) == 3:
                raise OSError(errno.ENOSPC, os.strerror(errno.ENOSPC))
        return real(name, mode, *a, **k)

    monkeypatch.chdir(here)
    monkeypatch.setattr(snapshot.h5py, "File", file)
    assert main(["run", "c.toml", "--quiet"]) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and "No space left on device" in err
    assert "snapshot_0002.hdf5" in err
    monkeypatch.setattr(snapshot.h5py, "File", real)
    assert [p.name for p in complete_snapshots(here / "out")] == ["snapshot_0000.hdf5",
                                                                 "snapshot_0001.hdf5"]
    assert not any(p.name.endswith(".tmp") for p in (here / "out").iterdir())


def test_non_finite_values_stop_the_run_naming_step_and_particles(here):
    rc, err = finish(start(here, ["run", "c.toml", "--quiet"], fault="nan@step:6"))
    assert rc == 2, err
    assert "step 6 produced non-finite" in err and "particle IDs [" in err, err
    assert "Traceback" not in err and err.count("\n") == 1
    names = [p.name for p in complete_snapshots(here / "out")]
    assert names == ["snapshot_0000.hdf5", "snapshot_0001.hdf5"]      # steps 0 and 4
    rows = read_diagnostics(here / "out" / "diagnostics.csv")
    assert max(int(r["step"]) for r in rows) == 4


# --- hostile snapshots and initial conditions --------------------------------------

def good_ics(path: Path, n: int = 200) -> None:
    from hybridtree.ics import plummer
    from hybridtree.io.snapshot import write_snapshot
    from hybridtree.particles import Particles
    from hybridtree.config.units import Units
    pos, vel, mass = plummer(n, seed=1)
    write_snapshot(path, Particles(pos, vel, mass, np.arange(1, n + 1, dtype=np.uint64)), 0.0,
                   Units(3.0856775814913673e21, 1.98841e43))


def _edit(name: str):
    def dataset(key, data):
        def change(f):
            del f[f"PartType1/{key}"]
            f[f"PartType1/{key}"] = data
        return change

    def header(key, value):
        def change(f):
            f["Header"].attrs[key] = value
        return change

    cases = {
        "wrong shape": (dataset("Coordinates", np.zeros((200, 2))), "Coordinates has shape"),
        "wrong dtype": (dataset("Velocities", np.full((200, 3), b"x")), "Velocities has dtype"),
        "missing group": (lambda f: f.__delitem__("PartType1"), "no PartType groups"),
        "header count": (header("NumPart_ThisFile", np.array([0, 150, 0, 0, 0, 0], np.uint32)),
                         "NumPart_ThisFile[1] is 150"),
        "nan": (lambda f: f["PartType1/Coordinates"].__setitem__(
            (7, 1), np.nan), "Coordinates[7] is not finite"),
        "inf velocity": (lambda f: f["PartType1/Velocities"].__setitem__(
            (3, 0), np.inf), "Velocities[3] is not finite"),
        "negative mass": (lambda f: f["PartType1/Masses"].__setitem__(5, -1.0),
                          "Masses[5] = -1.0 is negative"),
        "zero mass": (dataset("Masses", np.zeros(200)), "total mass is zero"),
        "duplicate ids": (dataset("ParticleIDs", np.r_[np.arange(1, 200), 9].astype(np.uint64)),
                          "ParticleIDs are not unique"),
        "mismatched lengths": (dataset("Masses", np.ones(199)), "Masses has shape (199,)"),
    }
    return cases[name]


HOSTILE = ["truncated", "not hdf5", "wrong shape", "wrong dtype", "missing group",
           "header count", "nan", "inf velocity", "negative mass", "zero mass",
           "duplicate ids", "mismatched lengths"]


@pytest.mark.parametrize("case", HOSTILE)
def test_hostile_initial_conditions_are_rejected_by_name(case, tmp_path, monkeypatch, capsys):
    ic = tmp_path / "ic.hdf5"
    good_ics(ic)
    if case == "truncated":
        ic.write_bytes(ic.read_bytes()[:ic.stat().st_size // 2])
        needle = "ic.hdf5"
    elif case == "not hdf5":
        ic.write_text("this is not a snapshot\n")
        needle = "not a readable HDF5 file"
    else:
        change, needle = _edit(case)
        with h5py.File(ic, "r+") as f:
            change(f)
    (tmp_path / "c.toml").write_text(CONFIG.replace('kind = "plummer"', 'kind = "file"\nfile = "ic.hdf5"'))
    monkeypatch.chdir(tmp_path)
    assert main(["run", "c.toml", "--quiet"]) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and err.startswith("hybridtree: error:"), err
    assert "ic.hdf5" in err and needle in err, err
    assert not (tmp_path / "out").exists()


@pytest.mark.parametrize("case", ["truncated", "nan", "duplicate ids", "header count"])
def test_hostile_restart_snapshots_are_rejected_by_name(case, here, monkeypatch, capsys):
    monkeypatch.chdir(here)
    (here / "c.toml").write_text(CONFIG.replace(f"t_end = {STEPS * DT}", f"t_end = {4 * DT}"))
    assert main(["run", "c.toml", "--quiet"]) == 0
    snap = here / "out" / "snapshot_0001.hdf5"
    if case == "truncated":
        snap.write_bytes(snap.read_bytes()[:snap.stat().st_size - 4000])
        needle = "snapshot_0001.hdf5"
    else:
        change, needle = _edit(case)
        if case == "header count":
            change = lambda f: f["Header"].attrs.__setitem__(     # noqa: E731
                "NumPart_ThisFile", np.array([0, 10, 0, 0, 0, 0], np.uint64))
            needle = "NumPart_ThisFile[1] is 10"
        if case == "duplicate ids":
            change = lambda f: f["PartType1/ParticleIDs"].__setitem__(0, 2)   # noqa: E731
        with h5py.File(snap, "r+") as f:
            change(f)
    capsys.readouterr()
    assert main(["run", "--restart", str(snap), "--set", "output.dir=again"]) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and "snapshot_0001.hdf5" in err and needle in err, err
    assert not (here / "again").exists()


# --- pathological particle sets -----------------------------------------------------

def _ics_file(path: Path, pos: np.ndarray, vel: np.ndarray, mass: np.ndarray) -> None:
    from hybridtree.io.snapshot import write_snapshot
    from hybridtree.particles import Particles
    from hybridtree.config.units import Units
    write_snapshot(path, Particles(pos, vel, mass, np.arange(1, len(mass) + 1, dtype=np.uint64)),
                   0.0, Units(3.0856775814913673e21, 1.98841e43))


def _pathological(kind: str) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    from hybridtree.ics import plummer
    if kind == "one point":
        return np.full((64, 3), 3.0), np.zeros((64, 3)), np.full(64, 1 / 64)
    if kind == "two clumps 1e10 apart":
        pos, vel, mass = plummer(200, seed=3)
        pos[100:] += 1e10
        return pos, vel, mass
    if kind == "cold grid":
        g = (np.arange(8) + 0.5) / 8
        pos = np.stack(np.meshgrid(g, g, g, indexing="ij"), -1).reshape(-1, 3)
        return pos, np.zeros_like(pos), np.full(len(pos), 1 / len(pos))
    if kind == "escaper":
        pos, vel, mass = plummer(200, seed=4)
        vel[0] = [3e3, -2e3, 1e3]          # leaves the box ~100 times over in 16 steps
        return pos, vel, mass
    raise ValueError(kind)


@pytest.mark.parametrize("kind", ["one point", "two clumps 1e10 apart", "cold grid", "escaper"])
def test_pathological_particle_sets_run_with_finite_energies(kind, tmp_path, monkeypatch):
    pos, vel, mass = _pathological(kind)
    _ics_file(tmp_path / "ic.hdf5", pos, vel, mass)
    cfg = CONFIG.replace('kind = "plummer"', 'kind = "file"\nfile = "ic.hdf5"').replace(
        f"t_end = {STEPS * DT}", f"t_end = {16 * DT}")
    (tmp_path / "c.toml").write_text(cfg)
    monkeypatch.chdir(tmp_path)
    assert main(["run", "c.toml", "--quiet"]) == 0
    rows = read_diagnostics(tmp_path / "out" / "diagnostics.csv")
    assert int(rows[-1]["step"]) == 16
    for r in rows:
        assert np.isfinite([float(r[k]) for k in ("kinetic", "potential", "total")]).all()
    end = read_snapshot(tmp_path / "out" / "snapshot_0004.hdf5").particles
    assert np.isfinite(end.pos).all() and np.isfinite(end.acc).all()
    if kind == "two clumps 1e10 apart":     # each clump stays bound, far from the other
        d = end.pos[100:].mean(axis=0) - end.pos[:100].mean(axis=0)
        assert np.linalg.norm(d) == pytest.approx(np.sqrt(3) * 1e10, rel=1e-9)
    if kind == "escaper":
        assert np.linalg.norm(end.pos[0]) > 500


@pytest.mark.mpi
@pytest.mark.parametrize("n", [1, 2, 3])
def test_fewer_particles_than_processes(n, here):
    cfg = CONFIG.replace("n = 500", f"n = {n}").replace(f"t_end = {STEPS * DT}", f"t_end = {4 * DT}")
    (here / "c.toml").write_text(cfg)
    rc, err = finish(start(here, ["run", "c.toml", "--quiet"], k=4))
    assert rc == 0, err
    s = read_snapshot(here / "out" / "snapshot_0001.hdf5")
    assert sorted(s.particles.ids.tolist()) == list(range(1, n + 1))
    assert np.isfinite(s.particles.pos).all() and np.isfinite(s.particles.acc).all()


def test_ctrl_c_during_start_up_leaves_nothing_and_a_rerun_proceeds(here):
    """Ctrl-C after run.log and diagnostics.csv exist, before the first snapshot: the
    folder the run made is gone; a folder the user made stays, empty; a re-run works."""
    rc, err = finish(start(here, ["run", "c.toml", "--quiet"], fault="sigint@start:0"))
    assert rc == 130, err
    assert "interrupted" in err and "Traceback" not in err
    assert not (here / "out").exists()
    (here / "out").mkdir()
    rc, err = finish(start(here, ["run", "c.toml", "--quiet"], fault="sigint@start:0"))
    assert rc == 130, err
    assert list((here / "out").iterdir()) == []
    rc, err = finish(start(here, ["run", "c.toml", "--quiet", "--set", "time.t_end=0.125"]))
    assert rc == 0, err
    assert (here / "out" / "snapshot_0000.hdf5").exists()


def test_a_rerun_replaces_what_a_start_up_left_without_a_snapshot(here, capsys):
    """Earlier versions left run.log and a header-only diagnostics.csv after Ctrl-C in
    start-up; with no snapshot there is nothing to continue, so a re-run replaces them,
    while a folder with a snapshot is still refused."""
    out = here / "out"
    out.mkdir()
    (out / "run.log").write_text("start: ...\n")
    (out / "diagnostics.csv").write_text("step,time\n")
    assert main(["run", str(here / "c.toml"), "--quiet", "--set", "time.t_end=0.0625",
                 "--set", f"output.dir={out}"]) == 0
    assert (out / "snapshot_0000.hdf5").exists() and "step" in (out / "run.log").read_text()
    assert main(["run", str(here / "c.toml"), "--quiet", "--set", "time.t_end=0.0625",
                 "--set", f"output.dir={out}"]) == 2
    assert "already holds a run" in capsys.readouterr().err


def test_ctrl_c_during_the_start_of_a_continued_run_keeps_its_log(here):
    """An interrupted start of a run continued in place removes nothing of the run."""
    rc, err = finish(start(here, ["run", "c.toml", "--quiet", "--set", "time.t_end=0.125"]))
    assert rc == 0, err
    log = (here / "out" / "run.log").read_text()
    rows = read_diagnostics(here / "out" / "diagnostics.csv")
    rc, err = finish(start(here, ["run", "--restart", "out", "--quiet", "--set",
                                  "time.t_end=0.25"], fault="sigint@start:0"))
    assert rc == 130, err
    assert (here / "out" / "run.log").read_text().startswith(log)
    assert read_diagnostics(here / "out" / "diagnostics.csv") == rows


def test_ctrl_c_during_the_last_snapshot_write_still_writes_it(here):
    """t_end off the snapshot schedule: the last state is written after the steps; a
    Ctrl-C while it is written waits for it (as during the steps), so the run ends
    complete with exit status 0."""
    rc, err = finish(start(here, ["run", "c.toml", "--quiet", "--set", f"time.t_end={10 * DT}"],
                           fault="sigint@write:10"))
    assert rc == 0, err
    s = read_snapshot(here / "out" / "snapshot_0003.hdf5")
    assert s.run_state["Step"] == 10
    assert not any(p.name.endswith(".tmp") for p in (here / "out").iterdir())
