"""hybridtree.cosmo: the ΛCDM background in internal units and the cosmological sphere
initial conditions (CPU only, each test a few seconds at most)."""

import math

import numpy as np
import pytest
import scipy.fft as sfft
from scipy import integrate

from hybridtree.config import MSUN_1E10_G
from hybridtree.cosmo import Cosmology
from hybridtree.ics import (cosmo_sphere, cosmo_sphere_share, lagrangian_positions,
                            linear_density_k, lpt_displacements, sphere_count, white_noise)
from hybridtree.cosmo.background import MPC_CM
from hybridtree.config.units import G_CGS, Units

MPC_UNITS = Units(MPC_CM, MSUN_1E10_G)          # 1 Mpc, 1e10 Msun
H = 0.7
PARAMS = dict(omega_b=0.045, h=H, sigma8=0.8, n_s=0.96, units=MPC_UNITS)


@pytest.fixture(scope="module")
def lcdm():
    return Cosmology(omega_m=0.3, omega_l=0.7, **PARAMS)


@pytest.fixture(scope="module")
def open_cdm():
    return Cosmology(omega_m=0.3, omega_l=0.0, **PARAMS)


def e_of_a(c: Cosmology, a: float) -> float:
    """H/H0 written out by hand (independent of colossus)."""
    return math.sqrt(c.omega_m / a ** 3 + (1.0 - c.omega_m - c.omega_l) / a ** 2 + c.omega_l)


# --- background ---------------------------------------------------------------------------

def test_h0_and_critical_density_in_internal_units(lcdm):
    # by hand: with L = 1 Mpc, H0 [internal] = 100 h km/s / v_unit
    v_unit_km_s = math.sqrt(G_CGS * MSUN_1E10_G / MPC_CM) / 1e5
    assert v_unit_km_s == pytest.approx(6.558, rel=1e-3)
    assert lcdm.H0 == pytest.approx(100.0 * H / v_unit_km_s, rel=1e-13)
    assert lcdm.H0 / H == pytest.approx(15.248, rel=1e-4)
    # ρ_crit,0 = 2.775e11 h² Msun/Mpc³ (colossus's G differs from CODATA 2018 by 3e-5)
    assert lcdm.rho_crit0 == pytest.approx(27.7536627 * H ** 2, rel=1e-4)
    assert lcdm.H(1.0) == pytest.approx(lcdm.H0, rel=1e-15)
    assert lcdm.particle_mass(2.0) == pytest.approx(0.3 * lcdm.rho_crit0 * 8.0, rel=1e-15)


def test_age_matches_analytic_flat_lcdm_and_open_models(lcdm, open_cdm):
    a = np.logspace(-6, 1, 29)
    om, ol = 0.3, 0.7
    t_flat = 2.0 / (3.0 * lcdm.H0 * math.sqrt(ol)) * np.arcsinh(np.sqrt(ol / om) * a ** 1.5)
    np.testing.assert_allclose(lcdm.t_of_a(a), t_flat, rtol=1e-10)
    ok = 1.0 - om                                   # open, no Λ: closed form of ∫ da/√(Ω_m/a + Ω_k)
    t_open = (np.sqrt(a * (om + ok * a)) / ok
              - om / ok ** 1.5 * np.arcsinh(np.sqrt(ok * a / om))) / open_cdm.H0
    np.testing.assert_allclose(open_cdm.t_of_a(a[a > 1e-3]), t_open[a > 1e-3], rtol=1e-10)
    assert not open_cdm.flat and lcdm.flat
    assert isinstance(lcdm.t_of_a(0.5), float)


@pytest.mark.parametrize("which", ["lcdm", "open_cdm"])
def test_a_of_t_inverts_t_of_a(which, request):
    c = request.getfixturevalue(which)
    a = np.logspace(-7, 1.5, 35)
    np.testing.assert_allclose(c.a_of_t(c.t_of_a(a)), a, rtol=1e-10, atol=0.0)
    a0 = c.a_of_t(c.t_of_a(1.0))
    assert isinstance(a0, float) and abs(a0 - 1.0) < 1e-12
    with pytest.raises(ValueError):
        c.a_of_t(-1.0)


@pytest.mark.parametrize("which", ["lcdm", "open_cdm"])
def test_growth_factor_matches_integral_form(which, request):
    c = request.getfixturevalue(which)

    def unnormalized(a):                            # D ∝ H(a) ∫_0^a da'/(a' H)³, plain a
        i = integrate.quad(lambda x: (x * e_of_a(c, x)) ** -3, 0.0, a,
                           epsabs=0.0, epsrel=1e-12, limit=200)[0]
        return e_of_a(c, a) * i

    for a in (0.005, 0.02, 0.1, 0.5, 1.0, 3.0):
        assert c.growth(a) == pytest.approx(unnormalized(a) / unnormalized(1.0), rel=1e-8)
    # early times: D ∝ a, up to Λ's (Ω_Λ/Ω_m) a³ or curvature's (Ω_k/Ω_m) a
    early = np.array([1e-6, 1e-5, 1e-4])
    d_over_a = c.growth(early) / early
    np.testing.assert_allclose(d_over_a, d_over_a[0], rtol=1e-9 if c.flat else 3e-4)
    assert c.growth(1.0) == pytest.approx(1.0, rel=1e-14)


def test_growth_agrees_with_colossus_tables(lcdm):
    a = np.array([0.01, 0.05, 0.2, 0.5, 0.8])
    np.testing.assert_allclose(lcdm.growth(a), lcdm.colossus.growthFactor(1.0 / a - 1.0),
                               rtol=1e-4)


@pytest.mark.parametrize("which", ["lcdm", "open_cdm"])
def test_growth_rate(which, request):
    c = request.getfixturevalue(which)
    a = np.array([0.01, 0.05, 0.2, 0.5, 1.0])
    f = c.growth_rate(a)
    h = 1e-4                                         # centred difference in ln a
    fd = (np.log(c.growth(a * math.exp(h))) - np.log(c.growth(a * math.exp(-h)))) / (2 * h)
    np.testing.assert_allclose(f, fd, rtol=1e-7)
    if which == "lcdm":                              # the Ω_m^0.55 fit holds for flat Λ
        np.testing.assert_allclose(f, c.omega_m_of_a(a) ** 0.55, rtol=1e-2)
    assert c.growth_rate(1e-6) == pytest.approx(1.0, abs=1e-9 if c.flat else 1e-5)


def test_power_spectrum_units(lcdm):
    mpch = MPC_CM / H                                # 1 Mpc/h in cm
    k_hmpc = np.array([0.01, 0.1, 1.0])
    k_int = k_hmpc / (mpch / MPC_UNITS.length_cm)
    p_ref = lcdm.colossus.matterPowerSpectrum(k_hmpc) * (mpch / MPC_UNITS.length_cm) ** 3
    np.testing.assert_allclose(lcdm.power(k_int), p_ref, rtol=1e-12)
    # the same cosmology in kpc units: k scales by 1e-3, P by 1e9
    kpc = Cosmology(omega_m=0.3, omega_l=0.7, **{**PARAMS, "units": Units(MPC_CM / 1e3, MSUN_1E10_G)})
    np.testing.assert_allclose(kpc.power(k_int * 1e-3), lcdm.power(k_int) * 1e9, rtol=1e-12)
    # σ8: 8 Mpc/h in internal lengths
    assert lcdm.sigma(8.0 / H) == pytest.approx(0.8, rel=5e-3)
    assert lcdm.sigma(8.0 / H, a=0.5) == pytest.approx(0.8 * lcdm.growth(0.5), rel=5e-3)
    assert lcdm.power(0.0) == 0.0
    with pytest.raises(ValueError):
        lcdm.power(-1.0)


def test_colossus_writes_no_files_and_leaves_global_cosmology(monkeypatch):
    from colossus.cosmology import cosmology as cc
    from colossus.utils import storage

    def no_cache_dir(*args, **kwargs):
        raise AssertionError("colossus asked for its cache directory")

    monkeypatch.setattr(storage, "getCacheDir", no_cache_dir)
    before = cc.current_cosmo
    c = Cosmology(omega_m=0.31, omega_l=0.69, **PARAMS)
    assert c.power(0.1) > 0.0 and c.sigma(8.0 / H) > 0.0 and c.t_of_a(0.5) > 0.0
    assert cc.current_cosmo is before


def test_cosmology_pickles_without_its_colossus_object(lcdm):
    import pickle
    lcdm.power(1.0)                                  # the colossus object exists now
    blob = pickle.dumps(lcdm)
    assert len(blob) < 2000
    back = pickle.loads(blob)
    assert back == lcdm and hash(back) == hash(lcdm)
    assert back.power(1.0) == lcdm.power(1.0) and back.t_of_a(0.3) == lcdm.t_of_a(0.3)


def test_invalid_cosmologies_are_refused():
    with pytest.raises(ValueError):
        Cosmology(omega_m=-0.3, omega_l=0.7, **PARAMS)
    with pytest.raises(ValueError):
        Cosmology(omega_m=0.3, omega_l=0.7, **{**PARAMS, "omega_b": 0.5})
    with pytest.raises(TypeError):
        Cosmology(omega_m=0.3, omega_l=0.7, **{**PARAMS, "units": None})


# --- the linear field -------------------------------------------------------------------------

def test_realized_power_spectrum_matches_input(lcdm):
    n, box = 64, 200.0 / H                            # 200 Mpc/h in Mpc
    delta_k = linear_density_k(n, box, lcdm, seed=3)
    delta = sfft.irfftn(delta_k, s=(n, n, n))
    kf = 2.0 * np.pi / box
    # measure on the full FFT: every k and -k counted, |δ_k|² V / N² estimates P(k)
    p_meas = np.abs(np.fft.fftn(delta)) ** 2 * box ** 3 / n ** 6
    ints = np.fft.fftfreq(n, 1.0 / n)
    kmag = kf * np.sqrt(ints[:, None, None] ** 2 + ints[None, :, None] ** 2 + ints[None, None, :] ** 2)
    p_in = lcdm.power(kmag)
    edges = kf * np.geomspace(2.0, n / 4.0, 9)        # 2 k_f .. k_Nyquist / 2
    ratios = []
    for lo, hi in zip(edges[:-1], edges[1:]):
        sel = (kmag >= lo) & (kmag < hi)
        n_modes = np.count_nonzero(sel)               # k and -k: n_modes/2 independent modes
        ratio = p_meas[sel].mean() / p_in[sel].mean()
        assert abs(ratio - 1.0) < 3.0 * math.sqrt(2.0 / n_modes), (lo / kf, ratio, n_modes)
        ratios.append(p_meas[sel] / p_in[sel])
    all_ratios = np.concatenate(ratios)
    assert abs(all_ratios.mean() - 1.0) < 0.04       # σ ≈ √(2/17000) ≈ 1.1 %
    # real-space variance: Σ_k P/V over the modes kept (k = 0 and Nyquist planes are zero)
    nyq = np.any(np.abs(np.stack(np.meshgrid(ints, ints, ints, indexing="ij"))) == n // 2, axis=0)
    var_expected = p_in[~nyq].sum() / box ** 3
    assert delta.var() == pytest.approx(var_expected, rel=0.1)
    assert delta_k[0, 0, 0] == 0.0
    assert np.all(delta_k[n // 2] == 0.0) and np.all(delta_k[:, :, n // 2] == 0.0)


def test_zeldovich_displacement_divergence_is_minus_delta(lcdm):
    n, box = 32, 100.0 / H
    delta_k = linear_density_k(n, box, lcdm, seed=5)
    psi1, psi2 = lpt_displacements(delta_k, box, order=1)
    assert psi2 is None and psi1.shape == (3, n, n, n)
    kf = 2.0 * np.pi / box
    k = [kf * np.fft.fftfreq(n, 1.0 / n)[:, None, None], kf * np.fft.fftfreq(n, 1.0 / n)[None, :, None],
         kf * np.arange(n // 2 + 1.0)[None, None, :]]
    div_k = sum(1j * k[a] * sfft.rfftn(psi1[a]) for a in range(3))
    assert np.abs(div_k + delta_k).max() < 1e-10 * np.abs(delta_k).max()


def test_white_noise_planes_have_their_own_streams():
    w = white_noise(8, seed=42)
    plane5 = np.random.default_rng(np.random.SeedSequence(42, spawn_key=(5,))).standard_normal((8, 8))
    assert np.array_equal(w[5], plane5)
    assert not np.array_equal(w, white_noise(8, seed=43))
    big = white_noise(48, seed=1)
    assert abs(big.mean()) < 0.01 and big.var() == pytest.approx(1.0, abs=0.02)


def test_2lpt_of_two_plane_waves_is_analytic():
    """ψ1 = (A sin kx, B sin ky, 0) (δ = -k (A cos kx + B cos ky)) has
    μ2 = A B k² cos kx cos ky and ψ2 = ∇φ2 = (A B k / 2)(sin kx cos ky, cos kx sin ky, 0)."""
    n, box = 16, 3.0
    k = 2.0 * (2.0 * np.pi / box)
    amp_a, amp_b = -0.01, -0.02                      # overdense at q = 0
    q = lagrangian_positions(np.arange(1, n ** 3 + 1), n, box).reshape(n, n, n, 3)
    x, y = q[..., 0], q[..., 1]
    delta = -k * (amp_a * np.cos(k * x) + amp_b * np.cos(k * y))
    psi1, psi2 = lpt_displacements(sfft.rfftn(delta), box, order=2)
    scale1, scale2 = 0.02, amp_a * amp_b * k / 2.0
    np.testing.assert_allclose(psi1[0], amp_a * np.sin(k * x), rtol=0, atol=1e-13 * scale1)
    np.testing.assert_allclose(psi1[1], amp_b * np.sin(k * y), rtol=0, atol=1e-13 * scale1)
    assert np.abs(psi1[2]).max() < 1e-13 * scale1
    np.testing.assert_allclose(psi2[0], scale2 * np.sin(k * x) * np.cos(k * y), rtol=0, atol=1e-12 * scale2)
    np.testing.assert_allclose(psi2[1], scale2 * np.cos(k * x) * np.sin(k * y), rtol=0, atol=1e-12 * scale2)
    assert np.abs(psi2[2]).max() < 1e-12 * scale2
    # D2 < 0: near the overdense point the second order pulls further in, along ψ1
    near = (np.abs(k * x) < np.pi / 4) & (np.abs(k * y) < np.pi / 4)
    d2 = -3.0 / 7.0                                  # at D = 1, Ω_m = 1
    assert np.all((d2 * psi2[0] * psi1[0])[near] >= 0.0)
    assert np.all((d2 * psi2[1] * psi1[1])[near] >= 0.0)


# --- the sphere -------------------------------------------------------------------------------

BOX = 60.0 / H                                       # 60 Mpc/h in Mpc
A_START = 1.0 / 50.0


@pytest.fixture(scope="module")
def sphere1(lcdm):
    return cosmo_sphere(32, BOX, 0.45 * BOX, A_START, lcdm, seed=7, order=1)


@pytest.fixture(scope="module")
def sphere2(lcdm):
    return cosmo_sphere(32, BOX, 0.45 * BOX, A_START, lcdm, seed=7, order=2)


@pytest.mark.parametrize("order", [1, 2])
def test_shares_concatenate_to_the_whole_bit_for_bit(lcdm, order, sphere1, sphere2):
    whole = sphere1 if order == 1 else sphere2
    count = sphere_count(32, BOX, 0.45 * BOX)
    assert count == len(whole[2])
    for cuts in ([0, count], [0, 1000, count], [0, 7, 7, count - 3, count]):
        parts = [cosmo_sphere_share(32, BOX, 0.45 * BOX, A_START, lcdm, 7, lo, hi, order=order,
                                    workers=1 + (i % 2)) for i, (lo, hi) in enumerate(zip(cuts[:-1], cuts[1:]))]
        for j in range(4):
            joined = np.concatenate([p[j] for p in parts])
            assert joined.dtype == whole[j].dtype
            assert joined.tobytes() == whole[j].tobytes(), (cuts, j)
    other = cosmo_sphere_share(32, BOX, 0.45 * BOX, A_START, lcdm, 8, 0, 100, order=order)
    assert not np.array_equal(other[0], whole[0][:100])


def test_sphere_is_the_lagrangian_cut(lcdm, sphere1):
    pos, vel, mass, ids = sphere1
    n, radius = 32, 0.45 * BOX
    q = lagrangian_positions(ids, n, BOX)
    assert np.all(np.linalg.norm(q, axis=1) < radius)
    all_q = lagrangian_positions(np.arange(1, n ** 3 + 1), n, BOX)
    assert np.count_nonzero(np.linalg.norm(all_q, axis=1) < radius) == len(ids)
    assert ids.dtype == np.uint64 and np.all(np.diff(ids.astype(np.int64)) > 0)
    assert np.abs(q.mean(axis=0)).max() < 1e-12 * BOX   # centred: the cut is symmetric
    assert pos.flags.c_contiguous and vel.flags.c_contiguous and pos.shape == (len(ids), 3)
    # mass: m N ≈ Ω_m ρ_crit,0 (4π/3) R³ (the lattice count's surface term, ~0.5 % here)
    m_sphere = mass.sum()
    assert np.all(mass == mass[0]) and mass[0] == lcdm.particle_mass(BOX / n)
    assert m_sphere == pytest.approx(0.3 * lcdm.rho_crit0 * 4.0 / 3.0 * math.pi * radius ** 3, rel=0.02)


def test_zeldovich_velocities(lcdm, sphere1):
    pos, vel, mass, ids = sphere1
    a = A_START
    h, f = lcdm.H(a), lcdm.growth_rate(a)
    q = lagrangian_positions(ids, 32, BOX)
    peculiar = vel - h * pos
    expected = a * f * h * (pos / a - q)
    scale = np.abs(h * pos).max()
    assert np.abs(peculiar - expected).max() < 1e-12 * scale
    # and the displacements are small at z = 49: rms a few % of the grid spacing .. 1
    rms = np.sqrt(np.mean((pos / a - q) ** 2))
    assert 0.01 * BOX / 32 < rms < BOX / 32


def test_second_order_correction_is_small_and_scales_with_d2(lcdm, sphere1, sphere2):
    q = lagrangian_positions(sphere1[3], 32, BOX)

    def ratio(s1, s2, a):
        za = s1[0] / a - q
        lpt2 = s2[0] / a - s1[0] / a
        return np.sqrt(np.mean(lpt2 ** 2) / np.mean(za ** 2))

    r50 = ratio(sphere1, sphere2, A_START)
    assert 1e-3 < r50 < 0.1                          # a few per cent at z = 49
    a2 = 2.0 * A_START
    s1 = cosmo_sphere(32, BOX, 0.45 * BOX, a2, lcdm, seed=7, order=1)
    s2 = cosmo_sphere(32, BOX, 0.45 * BOX, a2, lcdm, seed=7, order=2)
    r25 = ratio(s1, s2, a2)

    def d2_over_d(a):
        return 3.0 / 7.0 * lcdm.growth(a) * lcdm.omega_m_of_a(a) ** (-1.0 / 143.0)

    assert r25 / r50 == pytest.approx(d2_over_d(a2) / d2_over_d(A_START), rel=1e-8)
    # velocities: the 2LPT term moves with f2 = 2 Ω_m^{6/11}, about twice f
    h, f = lcdm.H(A_START), lcdm.growth_rate(A_START)
    dv = sphere2[1] - sphere1[1] - lcdm.H(A_START) * (sphere2[0] - sphere1[0])
    dx = sphere2[0] / A_START - sphere1[0] / A_START
    f2 = 2.0 * lcdm.omega_m_of_a(A_START) ** (6.0 / 11.0)
    assert f2 == pytest.approx(2.0 * f, rel=0.01)
    assert np.abs(dv - A_START * f2 * h * dx).max() < 1e-12 * np.abs(h * sphere1[0]).max()


def test_bad_arguments_are_refused(lcdm):
    with pytest.raises(ValueError):
        cosmo_sphere(16, 10.0, 6.0, 0.02, lcdm, 1)          # radius > box/2
    with pytest.raises(ValueError):
        cosmo_sphere(16, 10.0, 4.0, 0.02, lcdm, 1, order=3)
    with pytest.raises(ValueError):
        cosmo_sphere(16, 10.0, 4.0, 0.02, lcdm, -1)
    count = sphere_count(16, 10.0, 4.0)
    with pytest.raises(ValueError):
        cosmo_sphere_share(16, 10.0, 4.0, 0.02, lcdm, 1, 0, count + 1)
    with pytest.raises(ValueError):
        cosmo_sphere_share(16, 10.0, 4.0, 0.02, lcdm, 1, 5, 4)
    empty = cosmo_sphere_share(16, 10.0, 4.0, 0.02, lcdm, 1, 3, 3)
    assert all(len(x) == 0 for x in empty)
