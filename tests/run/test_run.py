"""The driver through the command line: outputs, restart, bad input, the main example."""

import json
import os
import subprocess
import sys
from pathlib import Path

import h5py
import numpy as np
import pytest

from tests.helpers import one_error_line, run_config
from hybridtree.cli import main
from hybridtree.analysis.diagnostics import read_diagnostics

ROOT = Path(__file__).resolve().parents[2]
DT = 1 / 64

SMALL = run_config(600, 4, 0.6, 10, 5, 2, DT)
CONFIG_FILES = {"small.toml": SMALL}


def particles(path):
    with h5py.File(path, "r") as f:
        return {k: f["PartType1"][k][...] for k in f["PartType1"]}, f["Header"].attrs["Time"]


def test_a_run_writes_snapshots_diagnostics_and_log(here, capsys):
    assert main(["run", "small.toml"]) == 0
    out = here / "out"
    names = sorted(p.name for p in out.iterdir())
    assert names == ["diagnostics.csv", "run.log", "snapshot_0000.hdf5", "snapshot_0001.hdf5",
                     "snapshot_0002.hdf5"]
    rows = read_diagnostics(out / "diagnostics.csv")
    assert [int(r["step"]) for r in rows] == [0, 2, 4, 6, 8, 10]
    assert float(rows[-1]["time"]) == 10 * DT
    assert abs(float(rows[-1]["rel_energy_error"])) < 1e-3
    data, t = particles(out / "snapshot_0002.hdf5")
    assert t == 10 * DT and len(data["Coordinates"]) == 600
    with h5py.File(out / "snapshot_0002.hdf5", "r") as f:
        assert f["Parameters"].attrs["gravity.theta"] == 0.6
        assert f["RunState"].attrs["Step"] == 10
    stdout = capsys.readouterr().out
    assert "step      10" in stdout and "dE/E" in stdout
    assert "step      10" in (out / "run.log").read_text()


def test_quiet_and_json(here, capsys):
    assert main(["run", "small.toml", "--quiet"]) == 0
    assert capsys.readouterr().out == ""
    assert main(["run", "small.toml", "--log-json", "--set", "output.dir=out_json"]) == 0
    events = [json.loads(line) for line in capsys.readouterr().out.splitlines()]
    assert events[0]["event"] == "start" and events[-1]["event"] == "end"
    diag = [e for e in events if e["event"] == "diagnostics"]
    assert [e["step"] for e in diag] == [0, 2, 4, 6, 8, 10]


def test_existing_output_needs_overwrite(here, capsys):
    assert main(["run", "small.toml", "--quiet"]) == 0
    before = (here / "out" / "snapshot_0002.hdf5").read_bytes()
    assert main(["run", "small.toml", "--set", "ics.seed=9"]) == 2
    one_error_line(capsys, "already holds a run", "--overwrite")
    assert (here / "out" / "snapshot_0002.hdf5").read_bytes() == before
    assert main(["run", "small.toml", "--quiet", "--overwrite", "--set", "ics.seed=9",
                 "--set", f"time.t_end={5 * DT}"]) == 0
    # the old run's later snapshot is gone, not left to be mistaken for the new run's
    assert sorted(p.name for p in (here / "out").glob("*.hdf5")) == [
        "snapshot_0000.hdf5", "snapshot_0001.hdf5"]


def test_restart_is_bit_for_bit(here, capsys):
    assert main(["run", "small.toml", "--quiet", "--set", "output.dir=full"]) == 0
    assert main(["run", "small.toml", "--quiet", "--set", "output.dir=half",
                 "--set", f"time.t_end={5 * DT}"]) == 0
    assert main(["run", "--restart", "half/snapshot_0001.hdf5", "--quiet",
                 "--set", f"time.t_end={10 * DT}"]) == 0
    a, ta = particles(here / "full" / "snapshot_0002.hdf5")
    b, tb = particles(here / "half" / "snapshot_0002.hdf5")
    assert ta == tb
    for k in a:
        assert a[k].tobytes() == b[k].tobytes(), k
    full = read_diagnostics(here / "full" / "diagnostics.csv")
    half = read_diagnostics(here / "half" / "diagnostics.csv")
    # the short run also reported at its last step (5); every other row is the same
    physics = list(full[0])[:list(full[0]).index("r90") + 1]     # not the timings
    assert ([[r[k] for k in physics] for r in half if r["step"] != "5"]
            == [[r[k] for k in physics] for r in full])


def test_interrupted_run_restarts_to_the_same_end(here, capsys, monkeypatch):
    assert main(["run", "small.toml", "--quiet", "--set", "output.dir=full"]) == 0
    from hybridtree.integrate.stepper import SerialStepper
    real, calls = SerialStepper.step, []

    def interrupt_at_step_8(*args, **kwargs):
        calls.append(1)
        if len(calls) == 8:
            raise KeyboardInterrupt
        return real(*args, **kwargs)

    monkeypatch.setattr(SerialStepper, "step", interrupt_at_step_8)
    assert main(["run", "small.toml", "--quiet", "--set", "output.dir=cut"]) == 130
    monkeypatch.setattr(SerialStepper, "step", real)
    assert sorted(p.name for p in (here / "cut").glob("*.hdf5")) == [
        "snapshot_0000.hdf5", "snapshot_0001.hdf5"]
    assert main(["run", "--restart", "cut/snapshot_0001.hdf5", "--quiet"]) == 0
    a, _ = particles(here / "full" / "snapshot_0002.hdf5")
    b, _ = particles(here / "cut" / "snapshot_0002.hdf5")
    for k in a:
        assert a[k].tobytes() == b[k].tobytes(), k


def test_restart_in_place_does_not_replace_later_snapshots(here, capsys):
    assert main(["run", "small.toml", "--quiet"]) == 0
    before = (here / "out" / "snapshot_0002.hdf5").read_bytes()
    assert main(["run", "--restart", "out/snapshot_0001.hdf5"]) == 2
    one_error_line(capsys, "snapshot_0002.hdf5", "--overwrite")
    assert main(["run", "--restart", "out/snapshot_0001.hdf5", "--quiet", "--overwrite"]) == 0
    a, _ = particles(here / "out" / "snapshot_0002.hdf5")
    assert a["Coordinates"].tobytes() == particles_of_bytes(before)["Coordinates"].tobytes()
    with h5py.File(here / "out" / "snapshot_0002.hdf5", "r") as f:
        assert f["RunState"].attrs["Step"] == 10
    assert len(read_diagnostics(here / "out" / "diagnostics.csv")) == 6


def particles_of_bytes(data: bytes):
    import io
    with h5py.File(io.BytesIO(data), "r") as f:
        return {k: f["PartType1"][k][...] for k in f["PartType1"]}


def nan_ics(path):
    with h5py.File(path, "w") as f:
        g = f.create_group("PartType1")
        pos = np.random.default_rng(0).normal(size=(10, 3))
        pos[3, 1] = np.nan
        g.create_dataset("Coordinates", data=pos)
        g.create_dataset("Masses", data=np.full(10, 0.1))


@pytest.mark.parametrize("case", ["bad config", "missing config", "unwritable folder",
                                  "no device", "nan ics", "missing ics", "missing restart",
                                  "not a run snapshot", "bad --set", "config and restart"])
def test_bad_input_exit_2_one_line_no_output(here, capsys, case):
    (here / "afile").write_text("x")
    nan_ics(here / "nan.hdf5")
    args, needles = {
        "bad config": (["run", "bad.toml"], ["unknown setting gravity.thetaa",
                                             "did you mean 'theta'"]),
        "missing config": (["run", "nothere.toml"], ["nothere.toml", "not found"]),
        "unwritable folder": (["run", "small.toml", "--set", "output.dir=afile/out"],
                              ["cannot write to output folder"]),
        "no device": (["run", "small.toml", "--device", "no-such-device-xyz"],
                      ["no-such-device-xyz"]),
        "nan ics": (["run", "small.toml", "--set", "ics.kind=file", "--set",
                     "ics.file=nan.hdf5"], ["nan.hdf5: PartType1/Coordinates[3] is not finite"]),
        "missing ics": (["run", "small.toml", "--set", "ics.kind=file", "--set",
                         "ics.file=gone.hdf5"], ["gone.hdf5: no such file"]),
        "missing restart": (["run", "--restart", "out/snapshot_0001.hdf5"], ["no such file"]),
        "not a run snapshot": (["run", "--restart", "nan.hdf5"], ["nan.hdf5"]),
        "bad --set": (["run", "small.toml", "--set", "gravity.theta=2"],
                      ["gravity.theta must be 0 < theta <= 1.2, got 2"]),
        "config and restart": (["run", "small.toml", "--restart", "x.hdf5"],
                               ["either a config file or --restart"]),
    }[case]
    (here / "bad.toml").write_text(SMALL.replace("theta = 0.6", "thetaa = 0.6"))
    before = set(os.listdir(here))
    assert main(args) == 2
    one_error_line(capsys, *needles)
    assert set(os.listdir(here)) == before            # nothing created
    assert capsys.readouterr().out == ""


def test_failure_before_the_first_snapshot_leaves_nothing(here, capsys, monkeypatch):
    def broken(self, state, parts):
        raise RuntimeError("kernel failed (simulated)")

    from hybridtree.gravity.engine import ForceEngine
    monkeypatch.setattr(ForceEngine, "compute", broken)
    assert main(["run", "small.toml", "--quiet"]) == 1     # not a user error: a bug
    err = capsys.readouterr().err
    assert "Traceback" in err and "RuntimeError: kernel failed (simulated)" in err
    assert "this is a bug" in err
    assert not (here / "out").exists()


def test_ic_info_and_file_initial_conditions(here, capsys):
    assert main(["ic", "hernquist", "-n", "800", "-o", "h.hdf5", "--seed", "3"]) == 0
    assert main(["ic", "hernquist", "-n", "800", "-o", "h.hdf5"]) == 2
    one_error_line(capsys, "h.hdf5 exists")
    assert main(["info", "h.hdf5"]) == 0
    info = capsys.readouterr().out
    assert "800 PartType1" in info and "total mass: 1" in info
    assert main(["run", "small.toml", "--quiet", "--set", "ics.kind=file",
                 "--set", "ics.file=h.hdf5"]) == 0
    with h5py.File("h.hdf5", "r") as f:
        ic = np.sort(f["PartType1/Masses"][...])
    data, _ = particles(here / "out" / "snapshot_0000.hdf5")
    assert np.array_equal(np.sort(data["Masses"]), ic)
    assert main(["info", "out/snapshot_0002.hdf5"]) == 0
    info = capsys.readouterr().out
    assert "run state: step 10" in info and "2K/|W|" in info


def test_bench_command(capsys):
    assert main(["bench", "-n", "3000", "--repeat", "1", "--json"]) == 0
    r = json.loads(capsys.readouterr().out)
    assert r["n"] == 3000 and r["interactions"] > 3000
    assert r["err_p99"] < 1e-2


def test_help_on_every_command(capsys):
    for cmd in ("run", "ic", "devices", "info", "plot", "bench"):
        with pytest.raises(SystemExit) as e:
            main([cmd, "--help"])
        assert e.value.code == 0
        assert "usage: hybridtree " + cmd in capsys.readouterr().out


@pytest.mark.slow
def test_readme_main_example(tmp_path):
    """`hybridtree run configs/plummer_small.toml`, as a user types it (console script)."""
    exe = Path(sys.executable).with_name("hybridtree")
    cmd = [str(exe)] if exe.exists() else [sys.executable, "-m", "hybridtree"]
    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    import shutil
    shutil.copytree(ROOT / "configs", tmp_path / "configs")
    r = subprocess.run(cmd + ["run", "configs/plummer_small.toml"], cwd=tmp_path, env=env,
                       capture_output=True, text=True, timeout=600)
    assert r.returncode == 0, r.stderr
    out = tmp_path / "out"
    assert len(list(out.glob("snapshot_*.hdf5"))) == 9
    rows = read_diagnostics(out / "diagnostics.csv")
    assert float(rows[-1]["time"]) == 4.0
    assert max(abs(float(x["rel_energy_error"])) for x in rows) < 1e-3
    assert (out / "run.log").read_text().startswith("start:")
