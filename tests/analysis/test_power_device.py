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
