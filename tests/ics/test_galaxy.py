"""Disk-galaxy initial conditions (hybridtree.ics.galaxy): shares of any partition are the
bits of the whole; each component follows its analytic profile; the spheroids' dispersions
follow the Jeans equation in the total potential; the disk's vertical and radial Jeans
equations hold with the forces hybridtree computes on the particles; a small model stays
in equilibrium under hybridtree itself.  References are computed here with scipy's
quadratures from the analytic profiles, not from the generator's tables."""

from __future__ import annotations

import math

import numpy as np
import pytest
from scipy import integrate, interpolate, special

import hybridtree
from hybridtree.gravity import accelerations
from hybridtree.ics.galaxy import (Disk, GalaxyParams, Spheroid, galaxy, galaxy_params,
                                   galaxy_share, galaxy_tables, m31, milky_way, split_counts)
from hybridtree.ics.hernquist_df import hernquist_df
from hybridtree.ics.spheres import BLOCK, com_offsets, exact_column_sums
from tests.helpers import once_per_run

#: 210 000 particles (3.2 blocks; component boundaries inside blocks), kpc and 1e10 Msun
MODEL = GalaxyParams(halo=Spheroid("nfw", 10.0, 5.0, 40.0, 4.0, 120_000),
                     disk=Disk(2.0, 2.0, 0.3, 60_000, toomre_q=1.5),
                     bulge=Spheroid("hernquist", 0.5, 0.4, 4.0, 0.4, 30_000))
SEED = 7


@pytest.fixture(scope="module")
def model(tmp_path_factory):
    """MODEL in its own frame (no centre-of-mass shift: the disk plane is z = 0); made
    once a run for both workers (tests.helpers.once_per_run: 1.7 CPU s)."""
    return once_per_run(tmp_path_factory, "test_galaxy.model",
                        lambda: galaxy_share(MODEL, 0, MODEL.n, SEED))


# --- independent references -------------------------------------------------------------


def shape(c: Spheroid, r):
    x = r / c.scale
    return 0.5 * special.erfc((r - c.r_cut) / (2 * c.cut_width)) / (
        x * (1 + x) ** (2 if c.kind == "nfw" else 3))


def enclosed(c: Spheroid, radii: np.ndarray) -> np.ndarray:
    """M(<r) of the spheroid at increasing ``radii`` by quad between consecutive radii."""
    f = lambda r: 4 * np.pi * r * r * shape(c, r)
    edges = np.concatenate([[0.0], radii])
    parts = [integrate.quad(f, a, b, limit=200)[0] for a, b in zip(edges[:-1], edges[1:])]
    total = integrate.quad(f, 0, c.r_cut + 40 * c.cut_width, limit=400,
                           points=[c.scale, c.r_cut])[0]
    return c.mass * np.cumsum(parts) / total


def disk_enclosed(d: Disk, r: float) -> float:
    """M_d(<r) of the exponential-sech² disk (spherical radius r)."""
    def f(z):
        x = math.sqrt(max(r * r - z * z, 0.0)) / d.r_d
        return 0.5 / d.z_d / math.cosh(z / d.z_d) ** 2 * (1 - (1 + x) * math.exp(-x))
    return 2 * d.mass * integrate.quad(f, 0, min(r, 25 * d.z_d), limit=200)[0]


def jeans_sigma2(params: GalaxyParams, comp: Spheroid, radii: np.ndarray) -> np.ndarray:
    """σ_r²(r) = (1/ρ) ∫_r^∞ ρ G M_tot(<r') / r'² dr' of an isotropic spheroid in the
    total spherically averaged mass (both spheroids and the disk)."""
    grid = np.geomspace(1e-3, comp.r_cut + 20 * comp.cut_width, 300)
    m_tot = sum(enclosed(c, grid) for c in (params.halo, params.bulge))
    m_tot = m_tot + np.array([disk_enclosed(params.disk, r) for r in grid])
    spline = interpolate.CubicSpline(np.log(grid), np.log(m_tot))
    mass = lambda r: math.exp(spline(math.log(r)))
    top = comp.r_cut + 12 * comp.cut_width          # the integrand is below 1e-60 beyond

    def sigma2(r):
        # in ln r', relative to ρ(r): an integrand of order one for quad's tolerances
        f = lambda u: shape(comp, math.exp(u)) / shape(comp, r) * mass(math.exp(u)) / math.exp(u)
        return integrate.quad(f, math.log(r), math.log(top), limit=200, epsabs=0.0,
                              epsrel=1e-7)[0]
    return np.array([sigma2(r) for r in radii])


def cylinder(pos, vel):
    """R, z, v_R, v_φ, v_z."""
    x, y, z = pos.T
    R = np.hypot(x, y)
    v_r = (x * vel[:, 0] + y * vel[:, 1]) / R
    v_phi = (x * vel[:, 1] - y * vel[:, 0]) / R
    return R, z, v_r, v_phi, vel[:, 2]


# --- (a) shares ---------------------------------------------------------------------------


@pytest.mark.parametrize("cuts", [
    [BLOCK - 1, BLOCK + 1, 120_000, 120_001, 180_000],       # around block and type edges
    list(range(0, 210_000, 30_000))[1:],                      # 7 equal shares
    [1, 2, 3, 99_999, 2 * BLOCK, 3 * BLOCK, 209_999],         # tiny and block-aligned shares
])
def test_the_shares_of_any_partition_are_the_bits_of_the_whole(model, cuts):
    edges = [0, *cuts, MODEL.n]
    shares = [galaxy_share(MODEL, lo, hi, SEED) for lo, hi in zip(edges[:-1], edges[1:])]
    for name in ("pos", "vel", "mass", "types", "ids"):
        joined = np.concatenate([getattr(s, name) for s in shares])
        assert np.array_equal(joined, getattr(model, name)), name
    assert np.array_equal(np.concatenate([s.sums for s in shares]), model.sums)
    whole = com_offsets([model.sums])
    parts = com_offsets([exact_column_sums(s.sums) for s in shares if len(s.sums)])
    assert all(np.array_equal(a, b) for a, b in zip(whole, parts))


def test_galaxy_gives_the_centre_of_mass_frame_types_and_ids():
    params = split_counts(MODEL, 20_000)
    pos, vel, mass, ids, types = galaxy(params, seed=3)
    assert np.allclose(np.sum(mass[:, None] * pos, 0) / mass.sum(), 0, atol=1e-12)
    assert np.allclose(np.sum(mass[:, None] * vel, 0) / mass.sum(), 0, atol=1e-12)
    assert np.array_equal(ids, np.arange(1, 20_001))
    counts = np.bincount(types, minlength=4)[1:]
    assert list(counts) == [params.halo.n, params.disk.n, params.bulge.n]
    assert list(np.unique(np.diff(types.astype(int)))) == [0, 1]        # halo, disk, bulge
    assert np.isclose(mass[types == 2].sum(), 2.0) and np.isclose(mass.sum(), 12.5)
    # equal masses throughout (counts in proportion to mass, to the rounding of a count)
    assert mass.max() / mass.min() - 1 < 2.0 / counts.min()


# --- (b) density profiles -------------------------------------------------------------------


def ks_distance(sample: np.ndarray, cdf) -> float:
    x = np.sort(sample)
    f = cdf(x)
    n = len(x)
    return float(max(np.max(np.arange(1, n + 1) / n - f), np.max(f - np.arange(n) / n)))


def test_every_component_follows_its_analytic_profile(model):
    """Kolmogorov-Smirnov distance below the 1 % critical value 1.63 / √n."""
    for comp, t in ((MODEL.halo, 1), (MODEL.bulge, 3)):
        r = np.linalg.norm(model.pos[model.types == t], axis=1)
        grid = np.geomspace(1e-4 * comp.scale, comp.r_cut + 20 * comp.cut_width, 400)
        frac = enclosed(comp, grid) / comp.mass
        d = ks_distance(r, lambda x: np.interp(np.log(x), np.log(grid), frac))
        assert d < 1.63 / math.sqrt(len(r)), (comp.kind, d)
    R, z, *_ = cylinder(model.pos[model.types == 2], model.vel[model.types == 2])
    disk = MODEL.disk
    d_r = ks_distance(R, lambda x: 1 - (1 + x / disk.r_d) * np.exp(-x / disk.r_d))
    d_z = ks_distance(z, lambda x: 0.5 * (1 + np.tanh(x / disk.z_d)))
    limit = 1.63 / math.sqrt(len(R))
    assert d_r < limit and d_z < limit, (d_r, d_z, limit)


# --- (c) spheroids: the Jeans equation ------------------------------------------------------


def test_eddingtons_inversion_gives_hernquists_closed_form_distribution_function():
    """A Hernquist sphere alone (G = M = a = 1, cut far out at 10^4 a): the tabulated f(E)
    against Hernquist (1990) eq. 17 at E - (Ψ(0) - 1) (the cut deepens Ψ by 2e-4), for 0.1
    <= E <= Ψ(0) - 0.001 (f rises 1.6e9-fold there): within 1 %.  Measured: 0.2 %."""
    alone = GalaxyParams(halo=Spheroid("hernquist", 1.0, 1.0, 1e4, 1e3, 10))
    tab = galaxy_tables(alone).halo
    shift = tab.psi[0] - 1.0
    sel = (tab.psi > 0.1) & (tab.psi < tab.psi[0] - 1e-3)
    ratio = tab.f[sel] / hernquist_df(tab.psi[sel] - shift)
    assert abs(shift) < 1e-3 and np.all(np.abs(ratio - 1) < 0.01), (shift, ratio.min(), ratio.max())


def test_spheroid_dispersions_follow_the_jeans_equation_in_the_total_potential(model):
    """In 8 radial bins of each spheroid: <v_r²> against the mean over the bin's particles
    of the Jeans σ_r²(r), and <v_t²>/2 against <v_r²> (isotropy), each within 4 standard
    errors √(2/n) + 0.5 %.  Measured: |<v_r²>/σ_J² - 1| <= 2.2 % (halo), 3.9 % (bulge),
    at most 1.9 standard errors; isotropy within 3.2 (the speeds' long tails in the bulge's
    cusp make √(2/n) an underestimate there).  Speeds 5 % too high fail in the halo."""
    for comp, t in ((MODEL.halo, 1), (MODEL.bulge, 3)):
        x, v = model.pos[model.types == t], model.vel[model.types == t]
        r = np.linalg.norm(x, axis=1)
        v_r = np.sum(x * v, axis=1) / r
        v_t2 = np.sum(v * v, axis=1) - v_r**2
        grid = np.geomspace(np.quantile(r, 0.005), np.quantile(r, 0.995), 48)
        sig2 = jeans_sigma2(MODEL, comp, grid)
        expect = np.interp(np.log(r), np.log(grid), sig2)
        edges = np.quantile(r, np.linspace(0.01, 0.99, 9))
        for lo, hi in zip(edges[:-1], edges[1:]):
            a = (r > lo) & (r < hi)
            tol = 4 * math.sqrt(2 / a.sum()) + 0.005
            ratio = np.mean(v_r[a] ** 2) / np.mean(expect[a])
            iso = np.mean(v_t2[a]) / 2 / np.mean(v_r[a] ** 2)
            assert abs(ratio - 1) < tol, (comp.kind, lo, hi, ratio, tol)
            assert abs(iso - 1) < tol, (comp.kind, lo, hi, iso, tol)


# --- (d) the disk: vertical and radial Jeans equations ------------------------------------------


@pytest.fixture(scope="module")
def disk_forces(model):
    """Accelerations at the disk particles from all particles (hybridtree's tree,
    softening 0.02 kpc = z_d / 15)."""
    sel = model.types == 2
    f = accelerations(model.pos, model.mass, eps=0.02, method="tree", theta=0.4,
                      sinks=model.pos[sel])
    return f.acc


def test_disk_scale_height_and_vertical_equilibrium(model, disk_forces):
    """In annuli at 1, 2 and 3 R_d: the sech² height from the median |z| (= z_d artanh ½)
    within 3 % of z_d, and the vertical virial theorem <v_z²> = -<z a_z> (the vertical Jeans
    equation times z, integrated over z) with hybridtree's forces within 4 %.  Measured:
    heights within 0.5 %, <v_z²> / -<z a_z> - 1 = +2.4 %, -0.2 %, +2.6 % (softening and
    the sample's own force noise).  σ_z 10 % too low or high (ratio -19 % / +21 %) fails."""
    sel = model.types == 2
    R, z, _, _, v_z = cylinder(model.pos[sel], model.vel[sel])
    r_d, z_d = MODEL.disk.r_d, MODEL.disk.z_d
    for centre in (1.0, 2.0, 3.0):
        a = np.abs(R / r_d - centre) < 0.5
        height = np.median(np.abs(z[a])) / math.atanh(0.5)
        assert abs(height / z_d - 1) < 0.03, (centre, height)
        virial = np.mean(v_z[a] ** 2) / -np.mean(z[a] * disk_forces[a, 2])
        assert abs(virial - 1) < 0.04, (centre, virial)


def test_disk_rotation_follows_the_radial_jeans_equation(model, disk_forces):
    """<v_φ²> = σ_R² + v_c² + σ_R² dln(ν σ_R²)/dln R (asymmetric drift; σ_Rz = 0) in annuli
    from 0.75 to 3.5 R_d, with v_c² = -R a_R from hybridtree's forces on the particles, σ_R
    measured and ν ∝ exp(-R/R_d) (checked above): within 3 %.  Measured: 2.0 % at most,
    the Poisson noise of this sample's own disk forces (a 400 000-particle disk reproduces
    the generator's Hankel-transform forces to 0.5 %).  Without the drift (mean v_φ = v_c)
    the residual is 4 - 17 %; rotation 2 % too fast gives 3.4 - 6.1 % and fails too."""
    sel = model.types == 2
    R, _, v_r, v_phi, _ = cylinder(model.pos[sel], model.vel[sel])
    a_r = (model.pos[sel, 0] * disk_forces[:, 0] + model.pos[sel, 1] * disk_forces[:, 1]) / R
    r_d = MODEL.disk.r_d
    edges = r_d * np.linspace(0.5, 4.0, 15)
    mid = 0.5 * (edges[1:] + edges[:-1])
    sig_r2 = np.array([np.var(v_r[(R > lo) & (R < hi)]) for lo, hi in zip(edges[:-1], edges[1:])])
    slope = np.polyval(np.polyder(np.polyfit(np.log(mid), np.log(sig_r2), 2)), np.log(mid))
    for k in range(1, len(mid) - 1):
        a = (R > edges[k]) & (R < edges[k + 1])
        drift = sig_r2[k] * (slope[k] - np.mean(R[a]) / r_d)
        predicted = sig_r2[k] + np.mean(-R[a] * a_r[a]) + drift
        ratio = np.mean(v_phi[a] ** 2) / predicted
        assert abs(ratio - 1) < 0.03, (mid[k], ratio)
        assert drift < -0.02 * predicted            # the drift is measurable where tested


# --- (e) equilibrium under hybridtree ---------------------------------------------------------

#: a compact model of 36 000 particles: disk R_d = 2 kpc, z_d = 0.3 kpc; v_c(2 R_d) = 0.87
#: (180 km/s), so R / v_c = 4.6 (22 Myr) at 2 R_d; evolved to t = 10 (2.2 of those) in
#: 100 steps of 0.1
SMALL = GalaxyParams(halo=Spheroid("hernquist", 10.0, 6.0, 30.0, 3.0, 16_000),
                     disk=Disk(2.0, 2.0, 0.3, 16_000, toomre_q=1.5),
                     bulge=Spheroid("hernquist", 0.5, 0.4, 4.0, 0.4, 4_000))


def disk_state(pos, vel, types):
    """Sech² height (median |z - median z| / artanh ½ about the disk's own centre and plane)
    and radial dispersion in the annulus 1.5 - 2.5 R_d."""
    d = types == 2
    centre = np.median(pos[d], axis=0)
    p, v = pos[d] - centre, vel[d] - vel[d].mean(axis=0)
    axis = np.sum(np.cross(p, v), axis=0)
    axis /= np.linalg.norm(axis)
    e1 = np.cross(axis, [1.0, 0.0, 0.0] if abs(axis[0]) < 0.9 else [0.0, 1.0, 0.0])
    e1 /= np.linalg.norm(e1)
    basis = np.stack([e1, np.cross(axis, e1), axis])
    R, z, v_r, _, _ = cylinder(p @ basis.T, v @ basis.T)
    a = np.abs(R / SMALL.disk.r_d - 2.0) < 0.5
    return np.median(np.abs(z[a] - np.median(z[a]))) / math.atanh(0.5), np.std(v_r[a])


@pytest.fixture(scope="module")
def small(tmp_path_factory) -> tuple:
    """galaxy(SMALL, seed=3), made once a run for the two tests below (once_per_run: they
    went to both workers, each making it, 1.7 CPU s)."""
    return once_per_run(tmp_path_factory, "test_galaxy.small", lambda: galaxy(SMALL, seed=3))


def evolve_small(small: tuple, scale_v: float) -> dict:
    pos, vel, mass, _, types = (a.copy() for a in small)     # the next test's too
    vel = vel * scale_v
    h0, s0 = disk_state(pos, vel, types)
    sim = hybridtree.Simulation(pos, vel, mass, types=types, eps=0.05, dt=0.1, theta=0.6,
                                quiet=True)
    heights, sigmas = [], []
    for t in (2.0, 4.0, 6.0, 8.0, 10.0):
        sim.evolve(t)
        h, s = disk_state(sim.pos, sim.vel, sim.types)
        heights.append(h / h0 - 1)
        sigmas.append(s / s0 - 1)
    virial = sim.diagnostics["virial_ratio"]
    return {"virial": float(np.max(np.abs(virial - 1))), "height": float(np.max(np.abs(heights))),
            "sigma_r": float(np.max(np.abs(sigmas)))}


#: bounds on the largest change from t = 0 over t = 2, 4, ..., 10 (2K/|W| at every report,
#: t = 0 included).  Measured for the model (2 cores, CPU device, steps of 0.05; of 0.1:
#: 0.0064, 4.9 %, 8.1 %): |2K/|W| - 1| = 0.006, height 4.7 %, σ_R(2 R_d) 7.9 % (numerical
#: heating of the 16 000-particle disk: it halves with 48 000 disk particles).  The same
#: model with every velocity x 0.8 (the slow test below): 0.36, 28 % and 310 %; x 0.9:
#: 0.19, 16 %, 74 %; x 1.1: 0.21, 35 %, 11 %.
BOUNDS = {"virial": 0.02, "height": 0.10, "sigma_r": 0.15}


def test_a_small_model_stays_in_equilibrium_under_hybridtree(small):
    """The compact model stays within BOUNDS to t = 10.  About 15 s on 2 cores (36 000
    particles, 100 steps): 2.2 turns at 2 R_d is what the too-slow model below needs to
    fail every bound (its docstring), and with fewer disk particles the numerical heating
    grows (σ_R 7.9 % at 16 000, half that at 48 000; at 8 000 it crossed the bound: 15.2 %)
    towards the bound of 15 %.  Steps of 0.05 gave the same figures as 0.1 (0.0061, 4.7 %,
    7.9 % against 0.0064, 4.9 %, 8.1 %) in twice the time.  Broken on purpose (the disk's
    σ_z 30 % low in hybridtree/ics/galaxy.py's _disk_particles): it failed, the height
    changed by 27 % (bound 10 %; virial 0.006, σ_R 9.0 %)."""
    change = evolve_small(small, 1.0)
    assert all(change[k] < BOUNDS[k] for k in BOUNDS), change


@pytest.mark.slow
def test_a_model_with_too_slow_velocities_fails_the_equilibrium_bounds(small):
    """The bounds fail a model out of equilibrium (steps of 0.1: 0.36, 28 % and 312 %;
    with 0.05 the same 0.36, 28 % and 310 %; the model at its own velocities, 0.0064,
    4.9 % and 8.1 %, fails this test).  Kept at the full 10 time units (~15 s on 2
    cores): the virial ratio is off from t = 0 and the disk's height by t = 3, but its
    radial dispersion at 2 R_d had changed by 3 % at t = 2 and 4 % at t = 4 (bound 15 %;
    2026-11-29, CPU device, steps of 0.05), so a shorter run would not fail every bound:
    4 % at t = 6, 24 % at t = 8 (the disk's instability growing 13 fold from t = 8 to 10:
    310 %), too near the bound for a run to t = 8 (20 % less) to fail it on every device."""
    change = evolve_small(small, 0.8)
    assert all(change[k] > BOUNDS[k] for k in BOUNDS), change


# --- parameters -------------------------------------------------------------------------------


def test_the_parameter_sets():
    mw, andromeda = milky_way(1 << 20), m31()
    assert mw.n == 1 << 20 and andromeda.n == 1 << 23
    assert (andromeda.halo.mass, andromeda.halo.scale, andromeda.bulge.mass,
            andromeda.bulge.scale, andromeda.disk.mass, andromeda.disk.r_d) == (
        81.1, 7.63, 3.24, 0.61, 3.66, 5.4)
    # MAGI's z_d = 0.6 kpc is where ρ falls by e: sech²(0.6 / z_d) = 1/e
    assert math.isclose(1 / math.cosh(0.6 / andromeda.disk.z_d) ** 2, math.exp(-1))
    # equal particle masses across components
    m = [c.mass / c.n for _, c in andromeda.components()]
    assert max(m) / min(m) < 1.001
    # the Milky Way's rotation curve at the Sun (8.2 kpc): 228 km/s in the tables
    tab = galaxy_tables(mw).disk
    v_sun = np.interp(math.log(8.2), tab.ln_r, tab.v_c) * 207.4
    assert 215 < v_sun < 240


def test_parameters_from_a_mapping():
    p = galaxy_params({"model": "milky_way", "n": 1000, "disk": {"toomre_q": 2.0}})
    assert p.n == 1000 and p.disk.toomre_q == 2.0 and p.halo.kind == "nfw"
    q = galaxy_params({"halo": {"kind": "hernquist", "mass": 5, "scale": 3, "r_cut": 30,
                                "cut_width": 3, "n": 1}, "disk": None, "n": 10})
    assert q.disk is None and q.halo.n == 10
    assert galaxy_params(p.to_dict()) == p


@pytest.mark.parametrize("make, message", [
    (lambda: Spheroid("plummer", 1, 1, 10, 1, 10), "kind"),
    (lambda: Spheroid("nfw", -1, 1, 10, 1, 10), "mass"),
    (lambda: Spheroid("nfw", 1, 0, 10, 1, 10), "scale"),
    (lambda: Spheroid("nfw", 1, 1, 0.5, 1, 10), "r_cut"),
    (lambda: Spheroid("nfw", 1, 1, 10, float("inf"), 10), "cut_width"),
    (lambda: Spheroid("nfw", 1, 1, 10, 1, 0), "n"),
    (lambda: Disk(1, 2, 0, 10), "z_d"),
    (lambda: Disk(1, 2, 1.5, 10), "thin"),
    (lambda: Disk(1, 2, 0.2, 10, toomre_q=-1), "toomre_q"),
    (lambda: GalaxyParams(), "at least one"),
    (lambda: galaxy_params({"model": "m33"}), "m33"),
    (lambda: galaxy_params({"halos": {}}), "halos"),
    (lambda: galaxy_share(MODEL, 5, 3), "lo"),
    (lambda: galaxy_share(MODEL, 0, 3, seed=-1), "seed"),
    (lambda: split_counts(MODEL, 2), "fewer"),
])
def test_bad_parameters_raise_clear_errors(make, message):
    with pytest.raises(ValueError, match=message):
        make()
