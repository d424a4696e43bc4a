"""P(k) of a periodic box against independent references: one plane wave of known
amplitude, Poisson points (shot noise), a Gaussian random field of known power (cosmic
variance), and the realization's own input power near the Nyquist frequency (aliasing)."""

from __future__ import annotations

import numpy as np
import pytest

from hybridtree.analysis.power import default_mesh, power_spectrum

L = 100.0          # box side (any length unit)
KF = 2 * np.pi / L
N_MESH = 32
N_GRF = 24         # the Gaussian random field's mesh


def lattice(nx: int, ny: int, nz: int) -> np.ndarray:
    """Points at the centres of an nx × ny × nz grid of the box, (N, 3)."""
    axes = [(np.arange(n) + 0.5) * L / n for n in (nx, ny, nz)]
    return np.stack([a.ravel() for a in np.meshgrid(*axes, indexing="ij")], axis=1)


def shell_index(k: np.ndarray) -> np.ndarray:
    """Our reference binning: shells of width k_f centred on k_f, 2 k_f, ...; 0 is k = 0."""
    return np.rint(k / KF).astype(int)


def mesh_modes(n: int) -> tuple[np.ndarray, np.ndarray]:
    """|k| of every wave vector of the full n³ grid, and its shell, k = 0 left out."""
    m = np.fft.fftfreq(n, 1.0 / n)
    kk = KF * np.sqrt(m[:, None, None] ** 2 + m[None, :, None] ** 2 + m[None, None, :] ** 2)
    kk = kk.ravel()[1:]
    return kk, shell_index(kk)


def power_law(k: np.ndarray) -> np.ndarray:
    """The test's P(k) (length³): a power law of slope −1.5, σ_δ ~ 0.03 on the lattice."""
    return 2.0 * (k / KF) ** -1.5


def zeldovich_field(n_p: int, seed: int) -> tuple[np.ndarray, np.ndarray]:
    """A Gaussian random field of power :func:`power_law` on an n_p³ grid, realized as the
    Zel'dovich displacement of a lattice (δ = −∇·ψ, ψ_k = i k δ_k / k²); returns the
    particles and the field's DFT δ^DFT (the truth of this realization)."""
    rng = np.random.default_rng(seed)
    m = np.fft.fftfreq(n_p, 1.0 / n_p)
    mz = np.fft.rfftfreq(n_p, 1.0 / n_p)
    kx, ky, kz = (KF * m[:, None, None], KF * m[None, :, None], KF * mz[None, None, :])
    k2 = kx ** 2 + ky ** 2 + kz ** 2
    k2[0, 0, 0] = 1.0
    # white noise has <|g^DFT|²> = n_p³, so δ^DFT = g^DFT sqrt(P n_p³ / V)
    delta = np.fft.rfftn(rng.standard_normal((n_p,) * 3)) * np.sqrt(
        power_law(np.sqrt(k2)) * n_p ** 3 / L ** 3)
    delta[0, 0, 0] = 0.0
    nyq = n_p // 2      # a Nyquist plane's displacement is not the field's: leave it out
    delta[nyq] = delta[:, nyq] = delta[:, :, nyq] = 0.0
    q = lattice(n_p, n_p, n_p)
    psi = [np.fft.irfftn(1j * k * delta / k2, s=(n_p,) * 3, axes=(0, 1, 2)).ravel()
           for k in (kx, ky, kz)]
    return q + np.stack(psi, axis=1), delta


def realization_power(delta: np.ndarray, n_p: int, n_mesh: int) -> np.ndarray:
    """The input field's own power V|δ^DFT|²/n_p⁶ averaged over the mesh's shells 1 .. n_mesh/2
    (no cosmic variance between it and a measurement of the same particles)."""
    full = np.fft.irfftn(delta, s=(n_p,) * 3, axes=(0, 1, 2))
    sub = np.fft.fftn(full)         # the mesh's wave vectors: |m_i| <= n_mesh / 2
    m = np.fft.fftfreq(n_p, 1.0 / n_p)
    take = np.flatnonzero(np.abs(m) <= n_mesh // 2)
    sub = sub[np.ix_(take, take, take)]
    mm = m[take]
    # the mesh's own grid counts each Nyquist component once (−n/2 only)
    once = np.flatnonzero(mm != n_mesh // 2)
    sub, mm = sub[np.ix_(once, once, once)], mm[once]
    kk = KF * np.sqrt(mm[:, None, None] ** 2 + mm[None, :, None] ** 2 + mm[None, None, :] ** 2)
    p = np.abs(sub) ** 2 * L ** 3 / n_p ** 6
    shell = shell_index(kk).ravel()
    n_sh = n_mesh // 2 + 1
    sums = np.bincount(shell, p.ravel(), minlength=n_sh)[1:n_sh]
    return sums / np.bincount(shell, minlength=n_sh)[1:n_sh]


def test_a_plane_wave_has_its_analytic_power_in_its_shell_and_none_elsewhere():
    amp, k0 = 0.01, 3 * KF
    # fine along the wave, so that the lattice's images lie far beyond the mesh
    pos = lattice(128, N_MESH, N_MESH)
    pos[:, 0] -= amp / k0 * np.sin(k0 * pos[:, 0])        # δ = −∂ψ/∂x = amp cos(k0 x)
    expected = L ** 3 * amp ** 2 / 4                       # V |δ_k|² at k0 and at −k0
    for order, interlace in ((3, True), (2, False)):
        ps = power_spectrum(pos, L, N_MESH, order=order, interlace=interlace,
                            subtract_shot_noise=False)
        assert len(ps.k) == N_MESH // 2 and ps.k[0] == pytest.approx(KF, rel=0.3)
        i = int(np.argmin(np.abs(ps.k - k0)))
        # the shell holds ±k0 among its other (empty) modes: its total is 2 V |δ_k|²
        assert ps.power[i] * ps.modes[i] / 2 == pytest.approx(expected, rel=0.01)
        assert np.all(np.abs(np.delete(ps.power, i)) < 1e-4 * expected)
        assert ps.n_particles == len(pos) and ps.n_mesh == N_MESH and ps.box == L


def test_the_modes_are_the_full_grids_wave_vectors_in_each_shell():
    ps = power_spectrum(lattice(8, 8, 8), L, N_MESH, subtract_shot_noise=False)
    _, shell = mesh_modes(N_MESH)
    expected = np.bincount(shell)[1:N_MESH // 2 + 1]
    assert ps.modes.tolist() == expected.tolist()
    assert ps.modes.sum() == np.count_nonzero((shell >= 1) & (shell <= N_MESH // 2))
    assert np.all(np.diff(ps.k) > 0) and ps.k[-1] == pytest.approx(np.pi * N_MESH / L, rel=0.02)


def test_poisson_points_have_the_shot_noise_and_nothing_else():
    n = 60_000
    pos = np.random.default_rng(1).uniform(0.0, L, size=(n, 3))
    ps = power_spectrum(pos, L, N_MESH)
    raw = power_spectrum(pos, L, N_MESH, subtract_shot_noise=False)
    shot = L ** 3 / n
    assert ps.shot_noise == pytest.approx(shot, rel=1e-12)
    sigma = shot * np.sqrt(2.0 / ps.modes)          # one complex Gaussian per ±k pair
    many = ps.modes >= 100
    assert np.all(np.abs(ps.power[many]) < 5 * sigma[many])
    chi2 = np.sum((ps.power[many] / sigma[many]) ** 2)
    assert chi2 < many.sum() + 5 * np.sqrt(2 * many.sum())
    assert np.allclose(raw.power - ps.power, shot)
    mean = np.sum(raw.power * raw.modes) / raw.modes.sum()
    assert mean == pytest.approx(shot, rel=0.03)
    assert np.all(np.abs(raw.power[many] / shot - 1) < 5 * np.sqrt(2.0 / raw.modes[many]))


def test_unequal_masses_have_their_shot_noise():
    rng = np.random.default_rng(2)
    pos = rng.uniform(-L, 2 * L, size=(20_000, 3))          # wrapped into the box
    mass = rng.uniform(0.5, 2.0, size=len(pos))
    ps = power_spectrum(pos, L, 16, mass=mass)
    assert ps.shot_noise == pytest.approx(L ** 3 * np.sum(mass ** 2) / np.sum(mass) ** 2)
    # the same points at twice the mass: the same P (δ is relative)
    twice = power_spectrum(pos, L, 16, mass=2 * mass)
    assert np.allclose(twice.power, ps.power, rtol=1e-12, atol=1e-12 * ps.shot_noise)


@pytest.fixture(scope="module")
def field() -> tuple[np.ndarray, np.ndarray]:
    """A Gaussian random field on a lattice of 3 × the mesh's points per side: it reaches
    3 × the mesh's Nyquist (aliases to be had), and the lattice's own images at
    2π/L · 3 n_mesh are odd images of the mesh, which interlacing cancels (with 2 × they
    would be even ones, and the displaced lattice's power around them aliases back)."""
    return zeldovich_field(3 * N_GRF, seed=7)


def test_a_gaussian_random_field_gives_its_power_within_cosmic_variance(field):
    pos, delta = field
    ps = power_spectrum(pos, L, N_GRF, subtract_shot_noise=False)    # a lattice: no shot noise
    kk, shell = mesh_modes(N_GRF)
    # the reference: P averaged over each shell's modes (not P at the mean k: the first
    # shells hold few |k| values and P is curved)
    n_sh = N_GRF // 2 + 1
    truth = (np.bincount(shell, power_law(kk), minlength=n_sh)[1:n_sh]
             / np.bincount(shell, minlength=n_sh)[1:n_sh])
    sigma = np.sqrt(2.0 / ps.modes)          # cosmic variance: one Gaussian per ±k pair
    ratio = ps.power / truth - 1
    assert np.all(np.abs(ratio) < 4 * sigma + 0.02), np.c_[ps.k / KF, ratio, sigma]
    chi2 = np.sum((ratio / sigma) ** 2)
    assert chi2 < len(ratio) + 5 * np.sqrt(2 * len(ratio)), np.c_[ps.k / KF, ratio, sigma]
    # against the realization's own power (no cosmic variance): what is left of aliasing
    # (the even images) and the displacements' second order, a few per cent near k_N
    own = realization_power(delta, 3 * N_GRF, N_GRF)
    assert np.all(np.abs(ps.power / own - 1) < 0.03), ps.power / own - 1


def test_tsc_with_interlacing_aliases_less_than_cic_near_nyquist(field):
    pos, delta = field
    own = realization_power(delta, 3 * N_GRF, N_GRF)
    tsc = power_spectrum(pos, L, N_GRF, order=3, interlace=True, subtract_shot_noise=False)
    cic = power_spectrum(pos, L, N_GRF, order=2, interlace=False, subtract_shot_noise=False)
    near = tsc.k > 0.6 * np.pi * N_GRF / L
    err_tsc = np.abs(tsc.power / own - 1)[near]
    err_cic = np.abs(cic.power / own - 1)[near]
    assert np.all(err_tsc < 0.03), err_tsc
    assert np.mean(err_cic) > 3 * np.mean(err_tsc) and np.max(err_cic) > 0.1, (err_cic, err_tsc)
    # far below the Nyquist frequency both are right
    assert np.allclose(cic.power[:4], own[:4], rtol=0.02)


def test_default_mesh_and_bad_arguments():
    assert default_mesh(64 ** 3) == 128 and default_mesh(64 ** 3 + 1) == 256
    assert default_mesh(10) == 8 and default_mesh(2 ** 40) == 512
    pos = np.zeros((4, 3))
    for kwargs in ({"order": 1}, {"box": 0.0}, {"n_mesh": 1}):
        args = {"box": L, "n_mesh": 8} | kwargs
        with pytest.raises(ValueError):
            power_spectrum(pos, args.pop("box"), args.pop("n_mesh"), **args)
    with pytest.raises(ValueError):
        power_spectrum(np.zeros((4, 2)), L, 8)


def test_bins_follow_n_bins_and_k_max():
    pos = np.random.default_rng(3).uniform(0, L, size=(5000, 3))
    ps = power_spectrum(pos, L, N_MESH, n_bins=4, k_max=8 * KF)
    assert len(ps.k) == 4 and ps.k[-1] < 8.5 * KF and ps.k[0] > 0.5 * KF
    assert ps.modes.sum() == np.count_nonzero((mesh_modes(N_MESH)[0] < 8.5 * KF))
