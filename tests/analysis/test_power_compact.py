"""P(k)'s shell sums on the compact float32 mesh (hybridtree.analysis.power_compact)
against the host's float64 path (hybridtree.analysis.power._host_shell_sums)."""

from dataclasses import replace

import numpy as np
import pytest

from hybridtree.analysis.power import _host_shell_sums, power_spectrum
from hybridtree.analysis.power_compact import compact_shell_sums, prefer_compact
from hybridtree.device.runtime import Runtime
from hybridtree.analysis.power_device import AxisTables
from hybridtree.device.transfer import upload
from hybridtree.gravity.periodic import Periodic
from hybridtree.gravity.pm_compact import CompactMesh


@pytest.mark.parametrize("order", [2, 3])
@pytest.mark.parametrize("interlace", [False, True])
def test_compact_shell_sums_match_the_host(runtime, order, interlace):
    if not runtime.has_fp64:
        pytest.skip("the compact mesh needs cl_khr_fp64 for the float64 positions")
    rng = np.random.default_rng(5)
    box, n_mesh = 2.0, 16
    pos = np.concatenate([rng.normal(1.0, 0.2, (1500, 3)), rng.uniform(-2, 4, (1500, 3))])
    mass = rng.uniform(0.5, 1.5, len(pos))
    kf = 2 * np.pi / box
    edges = 0.5 * kf + np.linspace(0.0, np.pi * n_mesh / box, 9)
    scale = n_mesh ** 3 / mass.sum()
    axes = AxisTables.make(n_mesh, order, kf)
    ref = _host_shell_sums(pos, mass, box, n_mesh, order, interlace, scale, edges, axes)
    mesh = CompactMesh(runtime, Periodic(box, n_mesh, asmth=0.5, rcut=2.0, order=order))
    pos_buf, mass_buf = upload(runtime, [pos, mass], [None, None])
    got = compact_shell_sums(mesh, pos_buf, mass_buf, len(pos), interlace, scale, edges,
                             axes)
    assert np.array_equal(got[0], ref[0]) and np.array_equal(got[1], ref[1])
    assert np.all(ref[2][1:-1] > 0)
    np.testing.assert_allclose(got[2][1:-1], ref[2][1:-1], rtol=2e-6)   # measured 1.1e-7 to 1.7e-7


def test_power_spectrum_takes_the_compact_mesh_where_the_float64_one_does_not_fit(runtime):
    """A device that allows 32 KiB per buffer: the float64 mesh of 16^3 (64 KiB of
    complex128) was refused there (MeshSizeError); the float32 one (16 KiB) takes it."""
    if not runtime.has_fp64:
        pytest.skip("the compact mesh needs cl_khr_fp64 for the float64 positions")
    rng = np.random.default_rng(6)
    pos = np.concatenate([rng.normal(0.5, 0.1, (1000, 3)), rng.uniform(0, 1, (1000, 3))])
    small = Runtime(replace(runtime.info, max_mem_alloc_size=2 ** 15), runtime.context,
                    runtime.queue)
    assert prefer_compact(small, len(pos), 16) and not prefer_compact(runtime, len(pos), 16)
    # shot noise kept: the subtraction would leave differences near 0 at high k
    got = power_spectrum(pos, 1.0, 16, runtime=small, subtract_shot_noise=False)
    ref = power_spectrum(pos, 1.0, 16, subtract_shot_noise=False)
    assert np.array_equal(got.modes, ref.modes) and np.array_equal(got.k, ref.k)
    np.testing.assert_allclose(got.power, ref.power, rtol=2e-6)


def test_a_1024_box_of_2_30_particles_takes_the_compact_mesh_on_an_h200(runtime):
    """The float64 P(k) of 2^30 particles on a 1024^3 mesh needs its 68 GiB of mesh and
    FFT scratch and 96 bytes a particle (positions, masses, cell keys, the sort, the
    sorted copies): more than an H200's 140 GiB, where it failed in reikna's FFT while
    48 bytes a particle were assumed (round 149); the compact mesh (8 GiB and the 32
    bytes a particle of positions and masses) is taken instead.  2^28 keeps float64."""
    h200 = Runtime(replace(runtime.info, global_mem_size=143771 * 2 ** 20,
                           max_mem_alloc_size=35942 * 2 ** 20), runtime.context, runtime.queue)
    assert prefer_compact(h200, 1 << 30, 1024)
    assert not prefer_compact(h200, 1 << 24, 512)
