"""The Python API refuses every bad argument with one clear user error (a
HybridtreeError naming the argument and its value) before it runs anything: NaN, inf and
text where numbers belong, arrays of different lengths, a save over an existing file;
and the command line refuses NaN and inf settings with exit status 2 and one line."""

import os
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

import hybridtree
from hybridtree.errors import HybridtreeError
from hybridtree.gravity import accelerations
from hybridtree.ics import plummer
from hybridtree.io.snapshot import read_snapshot
from tests.helpers import run_config

ROOT = Path(__file__).resolve().parents[2]
NAN, INF = float("nan"), float("inf")
DT = 0.25
CONFIG = run_config(64, 1, 0.6, 2, 1, 4, DT)


@pytest.fixture(scope="module")
def particles():
    return plummer(16, seed=3)


@pytest.fixture(scope="module")
def sim(particles):
    pos, vel, mass = particles
    return hybridtree.Simulation(pos, vel, mass, dt=DT, quiet=True)


def refused(call, kind, *needles):
    """``call()`` raises ``kind`` (and a HybridtreeError) whose message holds every
    needle; returns the message."""
    with pytest.raises(HybridtreeError) as info:
        call()
    assert isinstance(info.value, kind), repr(info.value)
    msg = str(info.value)
    assert "\n" not in msg, msg
    for needle in needles:
        assert needle in msg, msg
    return msg


@pytest.mark.parametrize("kwargs, kind, needles", [
    ({"dt": NAN}, ValueError, ("time.dt", "nan")),
    ({"dt": INF}, ValueError, ("time.dt", "inf")),
    ({"dt": -INF}, ValueError, ("time.dt", "-inf")),
    ({"dt": "1"}, ValueError, ("time.dt", "'1'")),
    ({"settings": {"time.dt": NAN}}, ValueError, ("time.dt", "nan")),
    ({"eps": NAN}, ValueError, ("gravity.eps", "nan")),
    ({"theta": INF}, ValueError, ("gravity.theta", "inf")),
    ({"snapshot_dt": NAN}, ValueError, ("output.snapshot_dt", "nan")),
    ({"time": NAN}, ValueError, ("Simulation(time)", "nan")),
    ({"time": INF}, ValueError, ("Simulation(time)", "inf")),
    ({"time": "1"}, TypeError, ("Simulation(time)", "'1'")),
    ({"time": None}, TypeError, ("Simulation(time)", "None")),
    ({"units": (NAN, 1.0)}, ValueError, ("units.length_cm", "nan")),
    ({"units": ("1", 1.0)}, ValueError, ("units.length_cm", "'1'")),
    ({"thetaa": 0.5}, TypeError, ("unknown setting 'thetaa'", "did you mean 'theta'")),
])
def test_simulation_refuses_non_finite_and_non_numeric_arguments(particles, kwargs, kind,
                                                                 needles):
    pos, vel, mass = particles
    refused(lambda: hybridtree.Simulation(pos, vel, mass, quiet=True, **kwargs), kind,
            *needles)


def test_numpy_scalars_are_numbers(particles):
    """np.float32 / np.int64 settings are taken as the numbers they are (they were refused
    as 'must be a number')."""
    pos, vel, mass = particles
    sim = hybridtree.Simulation(pos, vel, mass, dt=np.float32(DT), n_leaf=np.int64(8),
                                time=np.float32(0.5), quiet=True)
    assert sim.settings.time.dt == DT and type(sim.settings.time.dt) is float
    assert sim.settings.gravity.n_leaf == 8 and type(sim.settings.gravity.n_leaf) is int
    assert sim.t == 0.5


@pytest.mark.parametrize("call, kind, needles", [
    (lambda s: s.evolve(NAN), ValueError, ("evolve(t)", "nan")),
    (lambda s: s.evolve(INF), ValueError, ("evolve(t)", "inf")),
    (lambda s: s.evolve("1"), TypeError, ("evolve(t)", "'1'")),
    (lambda s: s.evolve(), TypeError, ("evolve",)),
    (lambda s: s.evolve(z=NAN), ValueError, ("evolve(z)", "nan")),
    (lambda s: s.evolve(z=1.0), ValueError, ("not a cosmological run",)),
    (lambda s: s.evolve(0.3), ValueError, ("evolve(0.3)", "nearest: 0.25")),
    (lambda s: s.evolve(-1.0), ValueError, ("evolve(-1.0)", "in the past")),
    (lambda s: s.step(NAN), ValueError, ("step(n)", "nan")),
    (lambda s: s.step(INF), ValueError, ("step(n)", "inf")),
    (lambda s: s.step("2"), TypeError, ("step(n)", "'2'")),
    (lambda s: s.step(True), TypeError, ("step(n)", "True")),
    (lambda s: s.step(1.5), ValueError, ("step(n)", "1.5")),
    (lambda s: s.step(-1), ValueError, ("step(n)", "-1")),
])
def test_evolve_and_step_refuse_bad_arguments_and_stay_usable(sim, call, kind, needles):
    refused(lambda: call(sim), kind, *needles)
    assert sim.t == 0.0 and sim.steps == 0           # nothing was stepped


def test_after_refusals_the_simulation_still_steps(particles):
    sim = hybridtree.Simulation(*particles, dt=DT, quiet=True)
    for bad in (NAN, INF, "1"):
        with pytest.raises(HybridtreeError):
            sim.evolve(bad)
    sim.step(np.int64(1))
    sim.evolve(2 * DT)
    assert sim.t == 2 * DT and sim.steps == 2 and np.isfinite(sim.pos).all()


def test_save_refuses_an_existing_file_unless_asked(particles, tmp_path):
    pos, vel, mass = particles
    s = hybridtree.Simulation(pos, vel, mass, dt=DT, quiet=True)
    path = tmp_path / "state.hdf5"
    assert s.save(path) == path
    before = path.read_bytes()
    s.step(1)
    refused(lambda: s.save(path), hybridtree.run.simulation.RunError, str(path),
            "exists already", "overwrite=True")
    assert path.read_bytes() == before                  # untouched
    assert read_snapshot(path).run_state["Step"] == 0
    assert s.save(path, overwrite=True) == path
    assert read_snapshot(path).run_state["Step"] == 1
    (tmp_path / "folder.hdf5").mkdir()
    refused(lambda: s.save(tmp_path / "folder.hdf5", overwrite=True),
            hybridtree.run.simulation.RunError, "folder.hdf5", "is a folder")


@pytest.mark.parametrize("cut, needles", [
    ({"mass": 15}, ("mass has 15 entries", "pos has 16 rows")),
    ({"pos": 15}, ("mass has 16 entries", "pos has 15 rows")),
    ({"vel": 15}, ("vel has shape (15, 3)", "pos has shape (16, 3)")),
    ({"ids": 15}, ("ids has 15 entries", "pos has 16 rows")),
    ({"types": 17}, ("types has 17 entries", "pos has 16 rows")),
])
def test_arrays_of_different_lengths_are_named_as_they_are(particles, cut, needles):
    pos, vel, mass = particles
    arrays = {"pos": pos, "vel": vel, "mass": mass, "ids": np.arange(1, 17),
              "types": np.ones(16, int)}
    name, n = next(iter(cut.items()))
    arrays[name] = (np.ones(n, int) if name == "types" else arrays[name][:n])
    if name == "pos":
        arrays["vel"] = vel[:n]
    msg = refused(lambda: hybridtree.Simulation(arrays["pos"], arrays["vel"], arrays["mass"],
                                                arrays["ids"], types=arrays["types"],
                                                quiet=True), ValueError, *needles)
    assert "len(mass)" not in msg


def test_types_out_of_range_are_a_user_error(particles):
    pos, vel, mass = particles
    refused(lambda: hybridtree.Simulation(pos, vel, mass, types=np.full(16, 7), quiet=True),
            ValueError, "types", "0 .. 5")


@pytest.mark.parametrize("kwargs, kind, needles", [
    ({"eps": NAN}, ValueError, ("accelerations(eps)", "nan")),
    ({"eps": "0.1"}, TypeError, ("accelerations(eps)", "'0.1'")),
    ({"theta": NAN}, ValueError, ("accelerations(theta)", "nan")),
    ({"theta": "0.5"}, TypeError, ("accelerations(theta)", "'0.5'")),
    ({"alpha": INF}, ValueError, ("accelerations(alpha)", "inf")),
    ({"box": NAN}, ValueError, ("accelerations(box)", "nan")),
    ({"rcut": INF, "box": 1.0}, ValueError, ("accelerations(rcut)", "inf")),
])
def test_accelerations_refuses_non_finite_and_non_numeric_knobs(particles, kwargs, kind,
                                                                needles):
    pos, _, mass = particles
    refused(lambda: accelerations(pos, mass, **kwargs), kind, *needles)


def test_accelerations_names_both_lengths(particles):
    pos, _, mass = particles
    with pytest.raises(ValueError, match=r"masses have shape \(15,\) but there are 16 "):
        accelerations(pos, mass[:15])


@pytest.mark.parametrize("setting, needle", [
    ("time.dt=nan", "time.dt must be finite, got nan"),
    ("time.dt=inf", "time.dt must be finite, got inf"),
    ("gravity.theta=nan", "gravity.theta must be finite, got nan"),
    ("time.t_end=-inf", "time.t_end must be finite, got -inf"),
    ("units.mass_g=nan", "units.mass_g must be finite, got nan"),
    ("output.redshifts=[1,nan]", "output.redshifts must be numbers >= 0"),
])
def test_the_command_line_refuses_nan_and_inf_settings_in_one_line(here, setting, needle):
    r = subprocess.run([sys.executable, "-m", "hybridtree", "run", "c.toml", "--set",
                        setting, "--quiet"], capture_output=True, text=True, cwd=here,
                       env={**os.environ, "PYTHONPATH": str(ROOT)}, timeout=300)
    assert r.returncode == 2, r.stderr
    assert r.stderr.count("\n") == 1 and r.stderr.startswith("hybridtree: error: --set "), \
        r.stderr
    assert needle in r.stderr and "Traceback" not in r.stderr
    assert sorted(p.name for p in here.iterdir()) == ["c.toml"]      # nothing written


@pytest.mark.parametrize("kw", [{"eps": -1.0}, {"theta": 2.0}, {"multipole": "octupole"},
                                {"method": "fmm"}, {"n_leaf": 0}])
def test_accelerations_knobs_out_of_range_are_user_errors(kw):
    """A knob out of its range is a HybridtreeError (one line from the command line) and
    still a ValueError, naming the knob."""
    from hybridtree.errors import HybridtreeError
    from hybridtree.gravity import accelerations

    pos = np.random.default_rng(1).normal(size=(50, 3))
    with pytest.raises(HybridtreeError, match=list(kw)[0]) as info:
        accelerations(pos, np.ones(50), **{"eps": 0.01, **kw})
    assert isinstance(info.value, ValueError)


def test_duplicate_ids_are_found_by_both_paths_of_the_check():
    """run/setup.py's ids_unique marks dense IDs in a byte per slot and sorts sparse ones:
    each path finds one duplicate among many (at the start, the end, across the chunks
    of its rows), and accepts every permutation of distinct IDs (against numpy's unique)."""
    from hybridtree.run import setup
    rng = np.random.default_rng(3)
    n = 5000
    dense = rng.permutation(np.arange(7, 7 + n, dtype=np.uint64))
    sparse = np.unique(rng.integers(0, 2**63, 2 * n, dtype=np.uint64))[:n]
    sparse = rng.permutation(sparse)
    for ids in (dense, sparse, dense[:1], dense[:0], np.array([2**64 - 1, 0], np.uint64)):
        assert setup.ids_unique(ids) == (len(np.unique(ids)) == len(ids))
        assert setup.ids_unique(ids)
    for ids in (dense, sparse):
        for i, j in ((0, 1), (0, n - 1), (n - 2, n - 1), (17, 4321)):
            bad = ids.copy()
            bad[j] = bad[i]
            assert not setup.ids_unique(bad), (i, j)
    # the chunks of the dense path: a duplicate split across two of them
    bad = dense.copy()
    bad[4000] = bad[3]
    assert not setup.ids_unique(bad, rows=64) and setup.ids_unique(dense, rows=64)
