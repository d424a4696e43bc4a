"""The relative opening criterion (GADGET's): its error against float64 direct sums on a
Plummer sphere and on a cusp with a satellite, against the geometric criterion at equal
cost, and its knobs."""

import numpy as np
import pytest

import hybridtree
from hybridtree.gravity import accelerations, direct_reference
from hybridtree.ics import hernquist_satellite, plummer

from tests.helpers import rel_err

N = 6000
EPS = 0.001


@pytest.fixture(scope="module", params=["plummer", "cusp"])
def model(request):
    if request.param == "plummer":
        pos, _, mass = plummer(N, seed=8)
    else:
        pos, _, mass = hernquist_satellite(N, seed=8)
    ref = accelerations(pos, mass, EPS, method="direct").acc
    return request.param, pos, mass, ref


def _stats(f, ref):
    e = rel_err(f.acc, ref)
    return np.percentile(e, 99), e.max(), f.interactions / len(ref)


@pytest.mark.parametrize("build", ["device", "host"])
def test_alpha_bounds_the_error_tail(model, build):
    """docs/physics.md: p99 about alpha / 4 to 2 alpha / 3, the largest error up to about
    3 alpha.  Measured here at alpha = 0.002: p99 8.6e-4 / 9.2e-4 (Plummer, device / host
    build), lower on the cusp."""
    name, pos, mass, ref = model
    f = accelerations(pos, mass, EPS, opening="relative", alpha=0.002, acc_old=ref,
                      build=build)
    p99, worst, _ = _stats(f, ref)
    assert p99 < 0.7 * 0.002 and worst < 3 * 0.002, (name, p99, worst)


def test_smaller_alpha_gives_smaller_errors_at_more_cost(model):
    name, pos, mass, ref = model
    loose = _stats(accelerations(pos, mass, EPS, opening="relative", alpha=0.01,
                                 acc_old=ref), ref)
    tight = _stats(accelerations(pos, mass, EPS, opening="relative", alpha=0.001,
                                 acc_old=ref), ref)
    assert tight[0] < loose[0] / 2 and tight[1] < loose[1] / 2 and tight[2] > loose[2]


def test_relative_beats_geometric_at_the_same_cost(model):
    """At no more interactions than theta = 0.5, a smaller p99 and a smaller worst
    error (measured at N = 6000: p99 0.66x, worst 0.53x on Plummer; the cusp better):
    the relative test spends its interactions where the force is weak."""
    name, pos, mass, ref = model
    geo = _stats(accelerations(pos, mass, EPS, theta=0.5, multipole="monopole"), ref)
    rel = _stats(accelerations(pos, mass, EPS, opening="relative", alpha=0.004, acc_old=ref,
                               multipole="monopole"), ref)
    assert rel[2] <= geo[2], (name, rel, geo)
    assert rel[0] < geo[0] and rel[1] < 0.75 * geo[1], (name, rel, geo)


def test_larger_groups_open_more_and_lose_no_accuracy(model):
    """Groups of 256 sinks against 128 (GPUs take 256 for relative walks from 2^21 sinks,
    DeviceTuning.relative_large_group): a group opens by its smallest |a_old| and its box,
    both of which a larger group can only lower or grow, so it makes more interactions
    and its errors are no larger (measured here on the CPU device: p99 and median 0.73-0.80 x)."""
    name, pos, mass, ref = model
    out = {}
    for n_group in (128, 256):
        f = accelerations(pos, mass, EPS, opening="relative", alpha=0.003, acc_old=ref,
                          n_group=n_group, multipole="monopole")
        out[n_group] = _stats(f, ref) + (np.median(rel_err(f.acc, ref)),)
    (p99_s, _, cost_s, med_s), (p99_l, _, cost_l, med_l) = out[128], out[256]
    assert cost_l > cost_s, (name, out)
    assert p99_l <= p99_s and med_l <= med_s, (name, out)


def test_quadrupoles_take_the_matching_exponent(model):
    name, pos, mass, ref = model
    mono = _stats(accelerations(pos, mass, EPS, opening="relative", alpha=0.002,
                                acc_old=ref, multipole="monopole"), ref)
    quad = _stats(accelerations(pos, mass, EPS, opening="relative", alpha=0.002,
                                acc_old=ref, multipole="quadrupole"), ref)
    assert quad[0] < mono[0] and quad[2] < mono[2]


def test_without_old_accelerations_a_geometric_pass_comes_first():
    pos, _, mass = plummer(3000, seed=9)
    first = accelerations(pos, mass, EPS, theta=0.6)
    both = accelerations(pos, mass, EPS, theta=0.6, opening="relative", alpha=0.003)
    given = accelerations(pos, mass, EPS, opening="relative", alpha=0.003, acc_old=first.acc)
    np.testing.assert_array_equal(both.acc, given.acc)
    assert "first_pass" in both.timings


def test_sinks_other_than_the_sources_take_their_own_old_accelerations():
    pos, _, mass = plummer(3000, seed=10)
    sinks = plummer(500, seed=11)[0]
    ref = accelerations(pos, mass, EPS, method="direct", sinks=sinks).acc
    f = accelerations(pos, mass, EPS, sinks=sinks, opening="relative", alpha=0.002,
                      acc_old=ref)
    assert np.percentile(rel_err(f.acc, ref), 99) < 0.001


@pytest.mark.parametrize("kwargs, words", [
    ({"opening": "nearest"}, "opening must be one of"),
    ({"opening": "relative", "alpha": 0.0}, "alpha must be"),
    ({"opening": "relative", "theta_max": 1.5}, "theta_max"),
    ({"opening": "relative", "acc_old": np.zeros((3, 3))}, "acc_old must have shape"),
])
def test_bad_knobs_are_refused(kwargs, words):
    pos, _, mass = plummer(100, seed=1)
    with pytest.raises(ValueError, match=words):
        accelerations(pos, mass, EPS, **kwargs)


@pytest.mark.parametrize("backend, build", [("device", "device"), ("host", "host"),
                                            ("host", "device")])
def test_a_run_uses_its_last_accelerations_as_a_old(backend, build, monkeypatch):
    """The first force of a run is the relative walk with the geometric forces as a_old
    (computed first); the next ones are the relative walk with the previous force as
    a_old, and differ from the geometric walk's.  The device state's
    forces are the public walk's to the bit (net force kept, so nothing else touches
    them); a host state with the device build walks its sinks from the host (its
    groups differ), to float32 rounding."""
    monkeypatch.setenv("HYBRIDTREE_STATE", backend)
    pos, vel, mass = plummer(2000, seed=12)
    settings = {"gravity.opening": "relative", "gravity.alpha": 0.002, "gravity.eps": 0.02,
                "gravity.remove_net_force": False, "time.dt": 1 / 64, "gravity.build": build}
    sim = hybridtree.Simulation(pos, vel, mass, quiet=True, settings=settings)
    kw = {"build": build}
    first = accelerations(pos, mass, 0.02, opening="relative", alpha=0.002,
                          acc_old=accelerations(pos, mass, 0.02, **kw).acc, **kw)
    if backend == build:
        np.testing.assert_array_equal(sim.acc, first.acc)
        # so E0 holds the relative walk's potential energy, not the geometric one's
        e = sim.energy()
        assert e["potential"] == pytest.approx(0.5 * np.dot(mass, first.pot), rel=1e-12)
    else:
        np.testing.assert_allclose(sim.acc, first.acc, rtol=0,
                                   atol=1e-5 * np.abs(first.acc).max())
    a_old = sim.acc.copy()
    sim.step(1)
    rel = accelerations(sim.pos, mass, 0.02, opening="relative", alpha=0.002, acc_old=a_old,
                        **kw)
    geo = accelerations(sim.pos, mass, 0.02, **kw)
    if backend == build:
        np.testing.assert_array_equal(sim.acc, rel.acc)
    else:
        np.testing.assert_allclose(sim.acc, rel.acc, rtol=0, atol=1e-5 * np.abs(rel.acc).max())
    assert not np.array_equal(rel.acc, geo.acc)
    assert np.abs(sim.acc - rel.acc).max() < 0.1 * np.abs(geo.acc - rel.acc).max()


def test_a_run_with_the_relative_criterion_restarts_bit_for_bit(tmp_path):
    pos, vel, mass = plummer(1000, seed=13)
    settings = {"gravity.opening": "relative", "gravity.alpha": 0.002, "gravity.eps": 0.02,
                "time.dt": 1 / 64}
    ref = hybridtree.Simulation(pos, vel, mass, quiet=True, settings=settings)
    ref.step(4)
    sim = hybridtree.Simulation(pos, vel, mass, quiet=True, settings=settings)
    sim.step(2)
    again = hybridtree.Simulation.from_snapshot(sim.save(tmp_path / "s.hdf5"), quiet=True)
    again.step(2)
    np.testing.assert_array_equal(again.pos, ref.pos)
    np.testing.assert_array_equal(again.vel, ref.vel)


def test_auto_settles_by_device_kind_and_by_what_the_run_can_take():
    from hybridtree.gravity.engine import GravitySettings
    from hybridtree.gravity.splitting import Changeover
    g = GravitySettings()
    assert (g.opening, g.multipole) == ("auto", "auto")
    cpu, gpu = g.settled("cpu"), g.settled("gpu")
    assert (cpu.opening, cpu.multipole) == ("relative", "quadrupole")
    assert (gpu.opening, gpu.multipole) == ("relative", "monopole")
    assert g.settled("gpu", relative_ok=False).opening == "geometric"
    hybrid = GravitySettings(changeover=Changeover(0.01, 0.1)).settled("gpu")
    assert hybrid.opening == "geometric"
    assert GravitySettings(method="direct").settled("cpu").opening == "geometric"
    fixed = GravitySettings(opening="geometric", multipole="monopole").settled("cpu")
    assert (fixed.opening, fixed.multipole) == ("geometric", "monopole")
    assert fixed.settled("gpu") == fixed                     # settling twice changes nothing


def test_an_engine_not_made_by_a_run_walks_auto_as_geometric():
    """Only a run knows whether it can take the relative criterion (many processes,
    overlap, the state's backend); an engine made directly settles "auto" as geometric."""
    from hybridtree.device.choice import get_runtime
    from hybridtree.gravity.engine import ForceEngine, GravitySettings
    rt = get_runtime()
    g = ForceEngine(GravitySettings(), rt).g
    assert g.opening == "geometric"
    assert g.multipole == ("quadrupole" if rt.info.kind == "cpu" else "monopole")


@pytest.mark.parametrize("multipole", ["auto", "monopole"])
def test_a_run_with_the_defaults_meets_the_accuracy_targets(multipole):
    """Issue 30: a run's default forces (after the first step) on a 10^5-particle Plummer
    sphere against float64 direct sums.  CPU devices ("auto": quadrupole relative):
    median <= 3e-4 (measured 1.1e-4; the old default had 3.0e-4).  Monopole relative,
    the GPUs' default (alpha = 0.003 since session 25), on any device: median <= 5e-4,
    p99 <= 2.5e-3 (measured 4.3e-4 and 2.2e-3 on the 2-core CPU device, median 4.3e-4 on
    the H100; alpha = 0.002 gave 3.3e-4 and 1.54e-3).  At 2^22 and 2^24 particles its p99 is
    1.0e-3 and 1.24e-3, issue 30's target 1.5e-3 there (docs/physics.md)."""
    pos, vel, mass = plummer(100_000, seed=1)
    settings = {"gravity.eps": 0.01} | ({} if multipole == "auto" else
                                        {"gravity.multipole": multipole})
    sim = hybridtree.Simulation(pos, vel, mass, quiet=True, settings=settings)
    sim.step(1)
    g = sim._stepper.engine.g
    cpu = sim._stepper.engine.rt.info.kind == "cpu"
    quad = multipole == "auto" and cpu
    assert (g.opening, g.multipole) == ("relative", "quadrupole" if quad else "monopole")
    p = sim.particles()
    idx = np.random.default_rng(7).choice(len(mass), 1000, replace=False)
    exact = direct_reference(p.pos, p.mass, 0.01, sinks=p.pos[idx])[0]
    err = rel_err(p.acc[idx], exact)
    assert np.median(err) <= (3e-4 if quad else 5e-4), np.median(err)
    assert np.percentile(err, 99) <= (1e-3 if quad else 2.5e-3), np.percentile(err, 99)


def test_auto_takes_quadrupoles_in_cosmological_runs():
    """Monopoles lose 7-14 % of |W| in the cosmological sphere by z = 0 (docs/cosmology.md)."""
    from hybridtree.gravity.engine import GravitySettings
    assert GravitySettings().settled("gpu", cosmological=True).multipole == "quadrupole"
    assert GravitySettings(multipole="monopole").settled(
        "gpu", cosmological=True).multipole == "monopole"


def test_relative_walks_on_gpus_walk_each_group_cooperatively():
    """walk_defines: a GPU's relative list walks take COOP work-items per group (capped at
    the device's work-group limit), its geometric walks the serial walk, a CPU device
    neither; an explicit COOP = 0 keeps the serial walk (history.md §23)."""
    import dataclasses
    from types import SimpleNamespace

    from hybridtree.gravity.criterion import Relative
    from hybridtree.gravity.tuning import TUNING
    from hybridtree.gravity.walk_kernels import walk_defines
    from tools.kernel_builds import PROFILES

    floor = Relative(0.002, 1.0, 0.25)
    coop = dict(TUNING.gpu.relative_walk)["COOP"]
    assert coop > 1

    def defines(profile, floor, options=None, **limits):
        rt = SimpleNamespace(info=dataclasses.replace(PROFILES[profile], **limits))
        return walk_defines(rt, 128, 16, False, options, None, "full", floor)

    assert defines("nvidia-h100", floor)["COOP"] == coop
    assert "COOP" not in defines("nvidia-h100", None)
    assert "COOP" not in defines("pocl-cpu", floor)
    assert defines("nvidia-h100", floor, {"COOP": 0})["COOP"] == 0
    assert defines("small-gpu", floor, max_work_group_size=16)["COOP"] == 16
