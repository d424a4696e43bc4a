"""P(k) with the mass assignment and FFT on the OpenCL device (the CPU device here) equals
the host's numpy / scipy path to rounding (both float64): clumps and a background, unequal
masses, particles given as other periodic images, CIC and TSC, with and without
interlacing, a power-of-two mesh and another."""

from __future__ import annotations

import numpy as np
import pytest

from hybridtree.analysis.power import power_spectrum
from hybridtree.device.choice import get_runtime


@pytest.fixture(scope="module")
def clumps() -> tuple[np.ndarray, np.ndarray]:
    rng = np.random.default_rng(2)
    centres = rng.random((20, 3)) * 50.0
    pos = np.concatenate([rng.random((3000, 3)) * 50.0,
                          (centres[:, None, :] + rng.normal(0, 0.8, (20, 200, 3))).reshape(-1, 3)])
    pos[::7] += 50.0 * rng.integers(-2, 3, (len(pos[::7]), 3))      # other images
    return pos, rng.random(len(pos)) + 0.5


@pytest.mark.parametrize("order, interlace, n_mesh",
                         [(2, False, 16), (2, True, 16), (3, False, 16), (3, True, 16),
                          (3, True, 24)])
def test_device_power_equals_the_hosts_to_rounding(clumps, order, interlace, n_mesh):
    pos, mass = clumps
    rt = get_runtime(None)
    if not rt.has_fp64:
        pytest.skip(f"{rt.info.name} has no double precision")
    host = power_spectrum(pos, 50.0, n_mesh, mass=mass, order=order, interlace=interlace)
    dev = power_spectrum(pos, 50.0, n_mesh, mass=mass, order=order, interlace=interlace,
                         runtime=rt)
    assert np.array_equal(dev.k, host.k) and np.array_equal(dev.modes, host.modes)
    assert dev.shot_noise == host.shot_noise
    # before the shot noise's subtraction, which can leave a small difference of two
    raw_dev, raw_host = dev.power + dev.shot_noise, host.power + host.shot_noise
    assert np.max(np.abs(raw_dev / raw_host - 1.0)) < 1e-10
    assert np.all(np.abs(dev.power - host.power) <= 1e-10 * raw_host)


@pytest.mark.parametrize("n_mesh, n_bins, k_max", [(16, 5, 1.2), (20, None, None)])
def test_device_shells_match_the_hosts_for_any_edges(clumps, n_mesh, n_bins, k_max):
    """The device sums each x-slab's modes into the shells itself (cl/power.cl): shells
    of another width and end, and another mesh, give the host's modes and mean |k| to the
    bit and its P(k) to rounding."""
    pos, mass = clumps
    rt = get_runtime(None)
    if not rt.has_fp64:
        pytest.skip(f"{rt.info.name} has no double precision")
    kw = dict(mass=mass, order=3, interlace=True, n_bins=n_bins, k_max=k_max)
    host = power_spectrum(pos, 50.0, n_mesh, **kw)
    dev = power_spectrum(pos, 50.0, n_mesh, runtime=rt, **kw)
    assert np.array_equal(dev.k, host.k) and np.array_equal(dev.modes, host.modes)
    raw_dev, raw_host = dev.power + dev.shot_noise, host.power + host.shot_noise
    assert np.max(np.abs(raw_dev / raw_host - 1.0)) < 1e-10


def test_device_power_reads_back_no_mesh(clumps, monkeypatch):
    """Only the shells' sums come back from the device, not the n³ complex mesh (2 GiB
    at 512³, and its reading and taking apart on the host were most of hybridtree pk's
    time on a GPU)."""
    import pyopencl as cl
    pos, mass = clumps
    rt = get_runtime(None)
    if not rt.has_fp64:
        pytest.skip(f"{rt.info.name} has no double precision")
    n_mesh = 32
    power_spectrum(pos, 50.0, n_mesh, mass=mass, runtime=rt)      # builds, outside the count
    read = []
    copy = cl.enqueue_copy

    def counting(queue, dest, src, *args, **kwargs):
        if isinstance(dest, np.ndarray):
            read.append(dest.nbytes)
        return copy(queue, dest, src, *args, **kwargs)
    monkeypatch.setattr(cl, "enqueue_copy", counting)
    power_spectrum(pos, 50.0, n_mesh, mass=mass, runtime=rt)
    assert 0 < sum(read) <= n_mesh * (n_mesh // 2 + 2) * 3 * 8 < n_mesh ** 3 * 16 // 8, read
