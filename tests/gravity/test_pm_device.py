"""The long-range mesh on the device (hybridtree.gravity.pm_device) against the float64
host reference (hybridtree.gravity.pm.pm_forces): the same forces and potentials, the
same bits on every call, per particle the same results whatever the input order."""

from dataclasses import replace

import numpy as np
import pyopencl as cl
import pytest

from hybridtree.device.runtime import Runtime
from hybridtree.gravity.periodic import Periodic, wrap
from hybridtree.gravity.pm import pm_forces

pytest.importorskip("reikna")
from hybridtree.gravity.pm_device import DeviceMesh, pm_defines  # noqa: E402  (needs reikna)

L = 1.0
#: the device keeps float64 throughout (FFTs included): rounding only, where the
#: requirement is 1e-5 (a complex64 FFT misses it by 10x on a near-uniform field)
TOL = 1e-9

_MESHES: dict = {}


@pytest.fixture
def mesh_of(runtime):
    if not runtime.has_fp64:
        pytest.skip("the device mesh needs cl_khr_fp64")

    def get(p: Periodic) -> DeviceMesh:
        if p not in _MESHES:            # a DeviceMesh compiles its FFT: share them
            _MESHES[p] = DeviceMesh(runtime, p)
        return _MESHES[p]
    return get


def _rms_rel(a, b):
    return np.sqrt(np.mean((a - b) ** 2) / np.mean(b ** 2))


def _clumps(rng, n):
    """Plummer-like clumps (half-mass radii 0.01-0.05 L) straddling the box's faces, and
    a uniform tenth: density contrasts of 10^4 and more."""
    centres, scale = rng.random((6, 3)), rng.uniform(0.01, 0.05, 6)
    which = rng.integers(0, 6, n)
    d = rng.normal(size=(n, 3))
    r = scale[which] / np.sqrt(rng.uniform(0.01, 1.0, n) ** (-2.0 / 3.0) - 1.0)
    pos = centres[which] + d / np.linalg.norm(d, axis=1)[:, None] * r[:, None]
    pos[: n // 10] = rng.random((n // 10, 3))
    return wrap(pos, L)


@pytest.fixture(scope="module")
def particles():
    rng = np.random.default_rng(7)
    pos = _clumps(rng, 3000)
    mass = rng.uniform(0.5, 1.5, len(pos)) / len(pos)
    sinks = rng.uniform(-0.5, 1.5, (700, 3))            # other images of the box too
    return pos, mass, sinks


@pytest.mark.parametrize("order", [2, 3])
@pytest.mark.parametrize("interlace", [False, True])
@pytest.mark.parametrize("with_sinks", [False, True])
def test_the_device_mesh_matches_the_host(mesh_of, particles, order, interlace, with_sinks):
    pos, mass, sinks = particles
    p = Periodic(L, 16, rcut=4.5, order=order, interlace=interlace)
    at = sinks if with_sinks else None
    acc, pot = mesh_of(p).forces(pos, mass, at)
    ref_acc, ref_pot = pm_forces(pos, mass, p, at)
    assert acc.shape == ref_acc.shape and pot.shape == ref_pot.shape
    assert _rms_rel(acc, ref_acc) < TOL
    assert _rms_rel(pot, ref_pot) < TOL


@pytest.mark.parametrize("n_mesh", [15, 18])
def test_meshes_of_other_sides_match_the_host(mesh_of, particles, n_mesh):
    """An odd side (no Nyquist planes) and an even side that is no power of two."""
    pos, mass, _ = particles
    p = Periodic(L, n_mesh, rcut=3.0)
    acc, pot = mesh_of(p).forces(pos, mass)
    ref_acc, ref_pot = pm_forces(pos, mass, p)
    assert _rms_rel(acc, ref_acc) < TOL
    assert _rms_rel(pot, ref_pot) < TOL


def test_a_near_uniform_field_matches_the_host(mesh_of):
    """A 32^3 lattice displaced by 1 % of its spacing on a 32^3 mesh: the force comes from
    contrasts of ~1e-2 under the mean density, which a float32 FFT would not resolve."""
    rng = np.random.default_rng(8)
    g = (np.arange(32) + 0.5) / 32
    pos = np.stack(np.meshgrid(g, g, g, indexing="ij"), -1).reshape(-1, 3)
    pos = wrap(pos + rng.normal(0.0, 0.01 / 32, pos.shape), L)
    mass = np.full(len(pos), 1.0 / len(pos))
    p = Periodic(L, 32)
    acc, pot = mesh_of(p).forces(pos, mass)
    ref_acc, ref_pot = pm_forces(pos, mass, p)
    assert _rms_rel(acc, ref_acc) < 1e-5
    assert _rms_rel(pot, ref_pot) < 1e-5


def test_the_same_input_gives_the_same_bits(runtime, mesh_of, particles):
    pos, mass, sinks = particles
    p = Periodic(L, 16, rcut=4.5)
    first = mesh_of(p).forces(pos, mass)
    again = mesh_of(p).forces(pos, mass)
    fresh = DeviceMesh(runtime, p).forces(pos, mass)
    for a, b, c in zip(first, again, fresh):
        assert np.array_equal(a, b) and np.array_equal(a, c)
    with_sinks = mesh_of(p).forces(pos, mass, sinks)
    assert np.array_equal(with_sinks[0], mesh_of(p).forces(pos, mass, sinks)[0])


def test_a_permutation_of_the_particles_permutes_the_results(mesh_of, particles):
    pos, mass, _ = particles
    p = Periodic(L, 16, rcut=4.5)
    perm = np.random.default_rng(9).permutation(len(pos))
    acc, pot = mesh_of(p).forces(pos, mass)
    acc_p, pot_p = mesh_of(p).forces(pos[perm], mass[perm])
    # only the order of the sums within a cell changes: rounding
    assert np.abs(acc_p - acc[perm]).max() < 1e-12 * np.abs(acc).max()
    assert np.abs(pot_p - pot[perm]).max() < 1e-12 * np.abs(pot).max()


def test_add_forces_adds_to_the_device_buffers(runtime, mesh_of, particles):
    pos, mass, _ = particles
    n = len(pos)
    p = Periodic(L, 16, rcut=4.5, order=2)
    acc0 = np.random.default_rng(10).normal(size=(n, 3))
    pot0 = np.linspace(-1.0, 1.0, n)
    bufs = [runtime.empty(a.nbytes) for a in (pos, mass, acc0, pot0)]
    for a, b in zip((pos, mass, acc0, pot0), bufs):
        cl.enqueue_copy(runtime.queue, b, np.ascontiguousarray(a))
    mesh_of(p).add_forces(bufs[0], bufs[1], n, bufs[2], bufs[3])
    acc, pot = np.empty_like(acc0), np.empty_like(pot0)
    cl.enqueue_copy(runtime.queue, acc, bufs[2])
    cl.enqueue_copy(runtime.queue, pot, bufs[3])
    runtime.queue.finish()
    ref_acc, ref_pot = mesh_of(p).forces(pos, mass)
    assert np.array_equal(acc, acc0 + ref_acc)          # one rounded add each
    assert np.array_equal(pot, pot0 + ref_pot)


def test_no_sources_give_no_force(mesh_of, particles):
    _, _, sinks = particles
    acc, pot = mesh_of(Periodic(L, 16, rcut=4.5)).forces(np.zeros((0, 3)), 1.0, sinks)
    assert acc.shape == (len(sinks), 3) and not acc.any() and not pot.any()


def test_a_mesh_too_big_for_the_device_is_refused(runtime, mesh_of):
    with pytest.raises(ValueError, match="pm_grid") as err:
        DeviceMesh(runtime, Periodic(L, 4096))              # 1 TiB of complex128
    assert "\n" not in str(err.value)
    small = Runtime(replace(runtime.info, max_mem_alloc_size=2 ** 20), runtime.context,
                    runtime.queue)
    DeviceMesh(small, Periodic(L, 32))                      # 512 KiB each: fits
    with pytest.raises(ValueError, match="per buffer"):
        DeviceMesh(small, Periodic(L, 64))                  # 4 MiB each: refused


def test_the_mesh_kernels_go_through_the_one_launcher(runtime, mesh_of, particles):
    """cl/pm.cl's kernels are enqueued by hybridtree.device.kernels.launch, as every other
    kernel of the code (issue 55): each one a mesh ran has its looked-up launch, with the
    mesh's defines and the element-wise kernels' work-group, in the runtime."""
    pos, mass, sinks = particles
    p = Periodic(L, 16, rcut=4.5)
    mesh_of(p).forces(pos, mass, sinks)
    defines = tuple(pm_defines(p.n_mesh, p.order).items())
    launched = {key[1] for key in runtime.launches if key[0] == "pm.cl" and key[2] == defines}
    assert {"pm_keys", "pm_sorted", "pm_cell_start", "pm_assign", "pm_green",
            "pm_interp"} <= launched
