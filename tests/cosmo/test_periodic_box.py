"""Periodic cosmological boxes: the comoving integration (hybridtree.integrate.comoving)
with TreePM forces, its snapshots in GADGET's convention, and the linear growth of the
largest scales.

References: the kick and drift factors of an Einstein-de Sitter background in closed
form; linear theory's growth factor D(a) (hybridtree.cosmo.background, itself checked
against colossus) for one plane wave, whose Zel'dovich motion is exact until shell
crossing; the power spectrum (hybridtree.analysis.power, checked in
tests/analysis/test_power.py) of a Gaussian field at z = 49 and z = 9."""

from pathlib import Path

import h5py
import numpy as np
import pyopencl as cl
import pytest

import hybridtree
from hybridtree.analysis.power import power_spectrum
from hybridtree.config.settings import ConfigError, load_config
from hybridtree.config.rules import process_refusal
from hybridtree.config.units import Units
from hybridtree.cosmo.background import Cosmology
from hybridtree.gravity.engine import ForceEngine, GravitySettings
from hybridtree.gravity.periodic import Periodic
from hybridtree.integrate.comoving import ComovingLeapfrog, drift_factor, kick_factor
from hybridtree.integrate.schedule import Cosmic
from hybridtree.state import DeviceState, HostState, make_state
from hybridtree.particles import Particles

ROOT = Path(__file__).resolve().parents[2]
UNITS = Units(3.0856775814913673e24, 1.98841e43)        # 1 Mpc, 1e10 Msun
COSMO = dict(omega_m=0.3, omega_l=0.7, omega_b=0.045, h=0.7, sigma8=0.8, n_s=0.96)


def background(**change) -> Cosmology:
    return Cosmology(**{**COSMO, **change}, units=UNITS)


def test_kick_and_drift_factors_of_einstein_de_sitter():
    """H = H0 a^(-3/2): ∫ da / (a² H) = 2 (√a1 - √a0) / H0 and ∫ da / (a³ H) =
    2 (1/√a0 - 1/√a1) / H0."""
    bg = background(omega_m=1.0, omega_l=0.0, omega_b=0.04)
    h0 = float(bg.H(1.0))
    for a0, a1 in ((0.02, 0.021), (0.1, 1.0), (0.5, 0.25)):
        assert kick_factor(bg, a0, a1) == pytest.approx(2 * (a1 ** 0.5 - a0 ** 0.5) / h0,
                                                        rel=1e-10)
        assert drift_factor(bg, a0, a1) == pytest.approx(2 * (a0 ** -0.5 - a1 ** -0.5) / h0,
                                                         rel=1e-10)


def test_host_and_device_states_wrap_to_the_same_bits(runtime):
    if not runtime.has_fp64:
        pytest.skip("the device state needs cl_khr_fp64")
    box = 142.85714285714286
    pos = np.array([[-1e-18, box, 3 * box + 0.1], [-box - 1e-9, 0.0, box * (1 - 1e-16)],
                    [71.4, -300.25, 1e-300]])
    p = Particles(pos, np.zeros_like(pos), np.ones(3), np.arange(1, 4, dtype=np.uint64))
    host, dev = HostState(p, ("full",)), DeviceState(runtime, p, ("full",))
    host.wrap(box)
    dev.wrap(box)
    got = dev.download().pos
    assert np.array_equal(got, host.pos)
    assert (got >= 0).all() and (got < box).all()


def plane_wave_run(runtime, n: int, kvec, steps: int, z1: float = 9.0, n_short: int = 1):
    """A lattice of n³ particles in a 100 Mpc/h box with one Zel'dovich plane wave of
    wave vector ``kvec`` (units of 2π/L) at z = 49, run to ``z1``: (measured amplitude /
    linear theory's, measured velocity amplitude / linear theory's)."""
    bg, box = background(), 142.85714285714286
    a0 = 1.0 / 50.0
    q = (np.indices((n, n, n)).reshape(3, -1).T + 0.5) * (box / n)
    k = 2 * np.pi / box * np.asarray(kvec, float)
    khat, amp0 = k / np.linalg.norm(k), 0.01 * box / n
    phase = q @ k
    psi = np.outer(amp0 * np.sin(phase), khat)
    p0 = a0 * a0 * float(bg.growth_rate(a0) * bg.H(a0)) * psi
    parts = Particles(np.mod(q + psi, box), p0, np.full(n ** 3, bg.particle_mass(box / n)),
                      np.arange(1, n ** 3 + 1, dtype=np.uint64))
    g = GravitySettings(eps=box / n / 30, theta=0.5, opening="geometric",
                        periodic=Periodic(box, 32), time_split=n_short > 1)
    engine = ForceEngine(g, runtime)
    state = make_state(parts, g.parts, "device" if runtime.has_fp64 else "host", runtime)
    sched = Cosmic(bg, 49.0, z1, steps, "log_a", [], comoving=True)
    scheme = ComovingLeapfrog(engine, bg, sched, 0, n_short)
    scheme.start(state)
    for _ in range(steps):
        scheme.step(state, 0.0)
    out = state.download()
    disp = (np.mod(out.pos - q + box / 2, box) - box / 2) @ khat
    a1 = sched.a(steps)
    grow = float(bg.growth(a1) / bg.growth(a0))
    amp = 2 * np.mean(disp * np.sin(phase))
    vel = 2 * np.mean((out.vel @ khat) * np.sin(phase))
    return (amp / (amp0 * grow),
            vel / (a1 * a1 * float(bg.growth_rate(a1) * bg.H(a1)) * amp))


def test_a_plane_wave_grows_as_linear_theory(runtime):
    """The box's fundamental mode along an axis, z = 49 -> 9 (D grows 4.9 times) in 24
    steps: amplitude and velocity within 0.5 % of linear theory (measured +0.33 % and
    +0.28 %: the lattice's own discreteness, which grows as (k / k_Nyquist)²; a mode of
    k = 3 gives +2.5 %, along the diagonal (1, 1, 1) -2.3 %, 4 times less at 32³)."""
    amp, vel = plane_wave_run(runtime, 16, (1, 0, 0), 24)
    assert amp == pytest.approx(1.0, abs=5e-3)
    assert vel == pytest.approx(1.0, abs=5e-3)


def box_config(tmp_path: Path, **change) -> Path:
    text = (ROOT / "configs" / "cosmo_box_small.toml").read_text()
    cfg = tmp_path / "box.toml"
    cfg.write_text(text)
    return cfg


def assert_restart_continues(cfg: Path, settings: dict, out: Path, redshift: str,
                             whole, first: int, rest: int) -> None:
    """A run of ``first`` steps with a snapshot at ``redshift`` (its second, the first
    being the start's), restarted from that snapshot for ``rest`` more steps, ends where
    ``whole`` (the particles of one uninterrupted run) ended, bit for bit."""
    with hybridtree.Simulation.from_config(cfg, {**settings, "output.dir": str(out),
                                                 "output.redshifts": redshift},
                                           output=True, quiet=True) as sim:
        sim.step(first)
    with hybridtree.Simulation.from_restart(str(out / "snapshot_0001.hdf5"), {},
                                            quiet=True) as sim:
        sim.step(rest)
        again = sim.particles()
    o1, o2 = np.argsort(whole.ids), np.argsort(again.ids)
    assert np.array_equal(whole.pos[o1], again.pos[o2])
    assert np.array_equal(whole.vel[o1], again.vel[o2])


def test_the_largest_scales_grow_as_d_squared(runtime, tmp_path):
    """A Gaussian field (2LPT) of 16³ particles in a 1000 Mpc/h box, z = 49 -> 9: the
    power of the fundamental shell grows as D(a)² within 1 % (measured 0.9951; the
    lattice's discreteness slows the diagonal modes of the higher shells: 0.97 at 2 k_f,
    see test_a_plane_wave_grows_as_linear_theory).  Through a run with output, as a user
    starts one; P(k) of the snapshots as `hybridtree pk` measures it."""
    box = 1428.5714285714287
    cfg = box_config(tmp_path)
    over = {"ics.n_grid": 16, "ics.box": box, "gravity.eps": box / 16 / 30,
            "cosmology.steps": 24, "cosmology.z_end": 9.0, "output.redshifts": "9",
            "output.dir": str(tmp_path / "out")}
    with hybridtree.Simulation.from_config(cfg, over, output=True, quiet=True) as sim:
        sim.evolve(z=9.0)
    bg = load_config(cfg, over)
    snaps = sorted((tmp_path / "out").glob("snapshot_*.hdf5"))
    assert len(snaps) == 2
    power, a = [], []
    for path in snaps:
        with h5py.File(path) as f:
            size = f["Header"].attrs["BoxSize"]
            a.append(f["Header"].attrs["Time"])
            pos = f["PartType1/Coordinates"][:]
        assert size == pytest.approx(box * 0.7, rel=1e-12)
        assert (pos >= 0).all() and (pos < size).all()
        power.append(power_spectrum(pos, size, 16, subtract_shot_noise=False).power[0])
    cosmo = background()
    grow = float(cosmo.growth(a[1]) / cosmo.growth(a[0])) ** 2
    assert a[0] == pytest.approx(0.02) and a[1] == pytest.approx(0.1)
    assert power[1] / power[0] / grow == pytest.approx(1.0, abs=0.01)
    assert bg.ics.kind == "cosmo_box"


def test_snapshots_follow_gadget_conventions_for_a_periodic_box(runtime, tmp_path):
    """BoxSize = L h, Coordinates = x h in [0, BoxSize), Velocities = the peculiar
    velocity p / a over √a, masses m h, Time = a: what GADGET-4 writes."""
    cfg = box_config(tmp_path)
    over = {"ics.n_grid": 8, "ics.box": 142.85714285714286, "gravity.eps": 0.5,
            "cosmology.steps": 2, "cosmology.z_end": 40.0, "output.redshifts": "",
            "output.dir": str(tmp_path / "out"), "gravity.pm_grid": 32, "output.gadget2": True}
    with hybridtree.Simulation.from_config(cfg, over, output=True, quiet=True) as sim:
        sim.step(2)
        p = sim.particles()
        a = sim.a
    # output.gadget2: the same box as GADGET-2 initial conditions (kpc/h, u = v_pec / sqrt a)
    from hybridtree.io.box_ics import read_box_ics
    twin = read_box_ics(tmp_path / "out" / "snapshot_0001.gadget2", UNITS)
    assert twin.a == pytest.approx(a, rel=1e-15) and twin.box == pytest.approx(142.857142857, rel=1e-9)
    o, ids = np.argsort(twin.ids), np.argsort(p.ids)
    assert np.array_equal(twin.ids[o], p.ids[ids]) and np.all(twin.types == 1)
    assert np.allclose(twin.pos[o], p.pos[ids], rtol=1e-13, atol=0)
    assert np.allclose(twin.vel[o], p.vel[ids] / a, rtol=1e-12, atol=0)
    assert np.allclose(twin.mass[o], p.mass[ids], rtol=1e-13, atol=0)
    with h5py.File(tmp_path / "out" / "snapshot_0001.hdf5") as f:
        head = f["Header"].attrs
        assert head["Time"] == pytest.approx(a) and head["BoxSize"] == pytest.approx(100.0)
        order = np.argsort(f["PartType1/ParticleIDs"][:])
        x = f["PartType1/Coordinates"][:][order]
        u = f["PartType1/Velocities"][:][order]
        m = f["PartType1/Masses"][:][order]
    ids = np.argsort(p.ids)
    assert np.allclose(x, p.pos[ids] * 0.7, rtol=1e-14, atol=0)
    # hybridtree info: the box and the rms peculiar velocity, the file's u sqrt(a)
    from hybridtree.analysis.info import describe
    text = describe(tmp_path / "out" / "snapshot_0001.hdf5")
    rms = np.sqrt(((u * np.sqrt(a)) ** 2).sum(axis=1).mean())
    assert "periodic box: BoxSize 100 " in text and f"rms {rms:.6g}" in text
    assert "Lagrangian" not in text
    # pynbody takes the box from Parameters (GADGET-4 keeps it there), yt from Header
    pynbody = pytest.importorskip("pynbody")
    snap = pynbody.load(str(tmp_path / "out" / "snapshot_0001.hdf5"))
    side = snap.properties["boxsize"].in_units("Mpc a h**-1", **snap.conversion_context())
    assert float(side) == pytest.approx(100.0, rel=1e-12)
    yt = pytest.importorskip("yt")
    ds = yt.load(str(tmp_path / "out" / "snapshot_0001.hdf5"))
    assert all(ds.periodicity) and ds.cosmological_simulation
    # yt's parsec differs from ours (IAU 2015) in the tenth digit
    assert float(ds.domain_width.to("Mpccm/h")[0]) == pytest.approx(100.0, rel=1e-8)
    assert np.allclose(u, p.vel[ids] / a ** 1.5, rtol=1e-12)
    assert np.allclose(m, p.mass[ids] * 0.7, rtol=1e-14)


@pytest.mark.parametrize("change, needle", [
    ({"cosmology.enabled": False}, "needs cosmology.enabled"),
    ({"gravity.multipole": "quadrupole"}, "gravity.multipole"),
    ({"hybrid.enabled": True}, "hybrid.enabled"),
])
def test_what_a_periodic_box_does_not_take_is_refused(tmp_path, change, needle):
    cfg = box_config(tmp_path)
    with pytest.raises(ConfigError, match=needle):
        load_config(cfg, change)


def test_a_power_spectrum_at_every_output_needs_a_box(tmp_path):
    with pytest.raises(ConfigError, match="output.power_spectrum"):
        load_config(box_config(tmp_path), {"ics.kind": "cosmo_sphere",
                                           "output.power_spectrum": True})


def test_a_periodic_box_runs_on_many_processes_without_the_overlap(tmp_path):
    values = load_config(box_config(tmp_path)).values
    assert process_refusal(values, 1) is None and process_refusal(values, 4) is None
    values = load_config(box_config(tmp_path), {"parallel.overlap": True}).values
    assert "parallel.overlap" in process_refusal(values, 2)


def _host(runtime, a, n: int) -> np.ndarray:
    """A host copy of (n, 3) accelerations held by a host or a device state."""
    if isinstance(a, np.ndarray):
        return a.copy()
    out = np.empty((n, 3))
    cl.enqueue_copy(runtime.queue, out, a)
    return out


def test_the_relative_criterion_with_the_time_split_scales_with_the_whole_force(runtime):
    """With the mesh and the tree apart (cosmology.short_steps > 1) the relative
    criterion's a_old is |short + long| (GADGET's OldAcc with the mesh; the state has no
    whole force: the walk once read a missing buffer and crashed).  The second force,
    relative, against geometric θ = 0.1: median 3.3e-5, p99 1.6e-3 of the force, as
    with the whole force in one part (tests/gravity/test_periodic.py)."""
    rng = np.random.default_rng(5)
    n = 4096
    pos = np.concatenate([rng.normal(0, 0.03, (n // 2, 3)), rng.random((n - n // 2, 3))]) % 1.0
    p = Particles(pos, np.zeros((n, 3)), np.full(n, 1.0 / n), np.arange(1, n + 1, dtype=np.uint64))
    backend = "device" if runtime.has_fp64 else "host"
    out = {}
    for opening, theta in (("relative", 0.5), ("geometric", 0.1)):
        g = GravitySettings(eps=1e-3, theta=theta, opening=opening, multipole="monopole",
                            periodic=Periodic(1.0, 32), time_split=True,
                            remove_net_force=False)
        engine = ForceEngine(g, runtime)
        state = make_state(p, g.parts, backend, runtime)
        for _ in range(2):
            engine.compute(state, g.parts)
        acc = {part: _host(runtime, a, n) for part, a in state.acc.items()}
        out[opening] = acc
        if opening == "relative":
            a_old = _host(runtime, engine.old_acc(state), n)
            assert np.array_equal(a_old, acc["short"] + acc["long"])
    rel, ref = out["relative"], out["geometric"]
    assert np.abs(rel["long"] - ref["long"]).max() < 1e-12 * np.abs(ref["long"]).max()
    err = np.linalg.norm(rel["short"] - ref["short"], axis=1) / np.linalg.norm(
        ref["short"] + ref["long"], axis=1)
    assert np.median(err) < 1e-4 and np.percentile(err, 99) < 5e-3, \
        (np.median(err), np.percentile(err, 99))


@pytest.mark.parametrize("fmt", [1, 2])
def test_a_box_read_from_gadget2_files_runs_as_the_generated_one(runtime, tmp_path, fmt):
    """The cosmo_box initial conditions written as a MUSIC-style GADGET-2 set (2 files,
    Mpc/h, double precision) and run with ics.kind = "box_file": the same particles and the
    same trajectories as the generated box, to the rounding of the file's units."""
    from hybridtree.ics.cosmo_box import cosmo_box_share
    from hybridtree.io.gadget_binary import write_gadget2
    cfg, box, n = box_config(tmp_path), 142.85714285714286, 8
    common = {"ics.n_grid": n, "ics.box": box, "gravity.eps": 0.5, "gravity.pm_grid": 32,
              "cosmology.steps": 3, "cosmology.z_end": 30.0, "output.redshifts": ""}
    bg, a0 = background(), 1.0 / 50.0
    x, p, m, ids = cosmo_box_share(n, box, a0, bg, 1, 0, n ** 3, order=2)
    write_gadget2(tmp_path / "ics", x, p / a0, m, ids, box, a0, 0.3, 0.7, 0.7, units=UNITS,
                  fmt=fmt, n_files=2, double=True, unit_length_cm=3.085678e24)
    runs = []
    for kind in ({}, {"ics.kind": "box_file", "ics.file": str(tmp_path / "ics"),
                      "ics.file_length_cm": 3.085678e24}):
        with hybridtree.Simulation.from_config(cfg, {**common, **kind}, quiet=True) as sim:
            sim.step(3)
            q = sim.particles()
            runs.append((q.ids.copy(), q.pos.copy(), q.vel.copy(), sim.settings.ics.box))
    (i0, x0, v0, b0), (i1, x1, v1, b1) = runs
    assert b1 == pytest.approx(b0, rel=1e-6)
    o0, o1 = np.argsort(i0), np.argsort(i1)
    assert np.array_equal(i0[o0], i1[o1])
    dx = np.mod(x1[o1] - x0[o0] + box / 2, box) - box / 2
    assert np.abs(dx).max() < 1e-5 * box / n
    assert np.allclose(v1[o1], v0[o0], rtol=1e-5, atol=1e-6 * np.abs(v0).max())


def test_a_box_file_of_another_cosmology_is_refused(tmp_path):
    from hybridtree.io.gadget_binary import write_gadget2
    from hybridtree.run.processes import RunError
    x = np.array([[1.0, 2.0, 3.0], [4.0, 5.0, 6.0]])
    write_gadget2(tmp_path / "ics", x, np.zeros_like(x), np.ones(2), np.arange(1, 3), 10.0,
                  1.0 / 50.0, 0.25, 0.75, 0.7, units=UNITS)
    cfg = box_config(tmp_path)
    with pytest.raises(RunError, match="omega_m = 0.25"):
        hybridtree.Simulation.from_config(cfg, {"ics.kind": "box_file",
                                                "ics.file": str(tmp_path / "ics")}, quiet=True)


def test_a_periodic_run_restarts_bit_for_bit(runtime, tmp_path):
    """4 steps in one go, and 2 steps + a restart from the snapshot written there + 2
    steps: the same bits (the snapshot keeps the exact comoving state beside GADGET's
    numbers, which do not round-trip)."""
    cfg = box_config(tmp_path)
    common = {"ics.n_grid": 8, "ics.box": 142.85714285714286, "gravity.eps": 0.5,
              "gravity.pm_grid": 32, "cosmology.steps": 4, "cosmology.z_end": 30.0,
              "output.redshifts": ""}
    with hybridtree.Simulation.from_config(cfg, {**common, "output.dir": str(tmp_path / "a")},
                                           quiet=True) as sim:
        sim.step(4)
        whole = sim.particles()
    # the snapshot closest to z = 40 is written at step 2 of the second run
    with hybridtree.Simulation.from_config(cfg, {**common, "output.dir": str(tmp_path / "b"),
                                                 "output.redshifts": "40"},
                                           output=True, quiet=True) as sim:
        sim.step(2)
    snap = tmp_path / "b" / "snapshot_0001.hdf5"
    with h5py.File(snap) as f:
        assert f["RunState"].attrs["Step"] == 2
    with hybridtree.Simulation.from_restart(str(snap), {}, quiet=True) as sim:
        sim.step(2)
        again = sim.particles()
    o1, o2 = np.argsort(whole.ids), np.argsort(again.ids)
    assert np.array_equal(whole.pos[o1], again.pos[o2])
    assert np.array_equal(whole.vel[o1], again.vel[o2])


def test_the_long_short_time_split(runtime, tmp_path):
    """cosmology.short_steps = 4: the mesh once per step, the tree four times (the counts
    say so); the plane wave still grows as linear theory within 0.5 % with 6 mesh steps
    from z = 49 to 9, and the run restarts bit for bit (its parts recomputed)."""
    cfg = box_config(tmp_path)
    common = {"ics.n_grid": 8, "ics.box": 142.85714285714286, "gravity.eps": 0.5,
              "gravity.pm_grid": 32, "cosmology.steps": 4, "cosmology.z_end": 30.0,
              "output.redshifts": "", "cosmology.short_steps": 4}
    with hybridtree.Simulation.from_config(cfg, {**common, "output.dir": str(tmp_path / "a")},
                                           quiet=True) as sim:
        sim.step(4)
        whole = sim.particles()
        counts = dict(sim._stepper.counts)
    assert counts["long_forces"] == 4 + 1 and counts["short_forces"] == 4 * 4 + 1
    assert_restart_continues(cfg, common, tmp_path / "b", "40", whole, 2, 2)


def test_a_plane_wave_with_the_time_split(runtime):
    """12 mesh steps of 4 tree steps each, z = 49 -> 9: the fundamental mode (the mesh's
    force) grows as with 12 steps of both parts, within 1e-3, and within 1 % of linear
    theory (measured with the split, 12 x 2: +0.05 % and +0.52 %; the mesh's step sets
    this mode's error: 6 steps of either kind give -0.9 % and +1.3 %)."""
    split = plane_wave_run(runtime, 16, (1, 0, 0), 12, n_short=4)
    plain = plane_wave_run(runtime, 16, (1, 0, 0), 12)
    assert split == pytest.approx(plain, abs=1e-3)
    assert split == pytest.approx((1.0, 1.0), abs=1e-2)
