"""The compact float32 mesh (hybridtree.gravity.pm_compact) against numpy's FFTs and the
float64 host reference (hybridtree.gravity.pm.pm_forces): its own FFT, the forces to
float32 rounding, the float4 output, the same bits on every call and in any particle
order (the integer deposit), the refusal of sides it cannot take."""

import gc

import numpy as np
import pyopencl as cl
import pytest

from hybridtree.gravity.periodic import Periodic, wrap
from hybridtree.gravity.pm import pm_forces
from hybridtree.gravity.pm_compact import CompactMesh, compact_mesh_bytes
from hybridtree.gravity.pm_device import MeshSizeError

from .test_pm_device import L, _clumps, _rms_rel

#: rms relative error against the float64 reference; measured 1e-7 to 6e-7 (module
#: docstring of pm_compact): float32 storage (eps 6e-8) and the FFT's log2(n) stages
TOL = 2e-6

_MESHES: dict = {}


@pytest.fixture
def mesh_of(runtime):
    if not runtime.has_fp64:
        pytest.skip("the compact mesh needs cl_khr_fp64 for the float64 positions")

    def get(p: Periodic) -> CompactMesh:
        if p not in _MESHES:
            _MESHES[p] = CompactMesh(runtime, p)
        return _MESHES[p]
    return get


def _lattice():
    """A 32^3 lattice displaced by 1 % of its spacing: contrasts of 1e-2 under the mean."""
    rng = np.random.default_rng(8)
    g = (np.arange(32) + 0.5) / 32
    pos = np.stack(np.meshgrid(g, g, g, indexing="ij"), -1).reshape(-1, 3)
    return wrap(pos + rng.normal(0.0, 0.01 / 32, pos.shape), L)


@pytest.fixture(scope="module")
def clumps():
    rng = np.random.default_rng(7)
    pos = _clumps(rng, 3000)
    return pos, rng.uniform(0.5, 1.5, len(pos)) / len(pos)


@pytest.mark.parametrize("n_mesh", [8, 32, 64])
def test_the_fft_matches_numpy(mesh_of, n_mesh):
    mesh = mesh_of(Periodic(L, n_mesh, asmth=0.5, rcut=2.0))
    field = np.random.default_rng(n_mesh).normal(size=(n_mesh,) * 3)
    ref = np.fft.rfftn(field)
    half = mesh.rfft(field)
    assert half.shape == ref.shape
    assert np.sqrt(np.mean(np.abs(half - ref) ** 2) / np.mean(np.abs(ref) ** 2)) < 1e-6
    back = mesh.irfft(ref)
    ref_back = np.fft.irfftn(ref, s=field.shape, axes=(0, 1, 2))
    assert _rms_rel(back, ref_back) < 1e-6


@pytest.mark.parametrize("order", [2, 3])
@pytest.mark.parametrize("interlace", [False, True])
def test_forces_on_a_displaced_lattice_match_the_host(mesh_of, order, interlace):
    pos = _lattice()
    p = Periodic(L, 32, rcut=4.5, order=order, interlace=interlace)
    acc, pot = mesh_of(p).forces(pos, 1.0 / len(pos))      # one mass for all
    ref_acc, ref_pot = pm_forces(pos, 1.0 / len(pos), p)
    assert _rms_rel(acc, ref_acc) < TOL
    assert _rms_rel(pot, ref_pot) < TOL


@pytest.mark.parametrize("order", [2, 3])
@pytest.mark.parametrize("interlace", [False, True])
def test_forces_on_clumps_match_the_host(mesh_of, clumps, order, interlace):
    pos, mass = clumps
    pos = pos + np.array([1.0, -2.0, 0.0])                  # other images of the box
    p = Periodic(L, 16, rcut=4.5, order=order, interlace=interlace)
    acc, pot = mesh_of(p).forces(pos, mass)
    ref_acc, ref_pot = pm_forces(pos, mass, p)
    assert _rms_rel(acc, ref_acc) < TOL
    assert _rms_rel(pot, ref_pot) < TOL


def _buffers(runtime, *arrays):
    bufs = [runtime.empty(max(a.nbytes, 1)) for a in arrays]
    for a, b in zip(arrays, bufs):
        cl.enqueue_copy(runtime.queue, b, np.ascontiguousarray(a))
    return bufs


@pytest.mark.parametrize("interlace", [False, True])
def test_add_forces4_adds_what_add_forces_adds(runtime, mesh_of, clumps, interlace):
    pos, mass = clumps
    n = len(pos)
    mesh = mesh_of(Periodic(L, 16, rcut=4.5, interlace=interlace))
    acc0 = np.random.default_rng(10).normal(size=(n, 3))
    pot0 = np.linspace(-1.0, 1.0, n)
    part0 = np.random.default_rng(11).normal(size=(n, 4)).astype(np.float32)
    pos_buf, mass_buf, acc_buf, pot_buf, part_buf = _buffers(runtime, pos, mass, acc0, pot0,
                                                             part0)
    mesh.add_forces(pos_buf, mass_buf, n, acc_buf, pot_buf)
    mesh.add_forces4(pos_buf, mass_buf, n, part_buf)
    acc, pot, part = np.empty_like(acc0), np.empty_like(pot0), np.empty_like(part0)
    for host, buf in ((acc, acc_buf), (pot, pot_buf), (part, part_buf)):
        cl.enqueue_copy(runtime.queue, host, buf)
    runtime.queue.finish()
    ref_acc, ref_pot = mesh.forces(pos, mass)
    if not interlace:                   # one rounded add each
        assert np.array_equal(acc, acc0 + ref_acc) and np.array_equal(pot, pot0 + ref_pot)
    else:                               # two halves added one after the other
        eps = np.finfo(np.float64).eps
        assert np.all(np.abs(acc - acc0 - ref_acc) <= 2 * eps * (np.abs(acc0) + np.abs(ref_acc)))
        assert np.all(np.abs(pot - pot0 - ref_pot) <= 2 * eps * (np.abs(pot0) + np.abs(ref_pot)))
    scale = np.abs(np.column_stack([ref_acc, ref_pot])).max(axis=0)
    # float32 rounding of each mesh's term and of the sums (2 meshes: 3 roundings)
    diff = part.astype(np.float64) - part0 - np.column_stack([ref_acc, ref_pot])
    assert np.all(np.abs(diff) <= 4 * np.finfo(np.float32).eps * (np.abs(part0) + scale))


def test_the_same_bits_on_every_call_and_in_any_order(runtime, mesh_of, clumps):
    pos, mass = clumps
    p = Periodic(L, 16, rcut=4.5)
    first = mesh_of(p).forces(pos, mass)
    fresh = CompactMesh(runtime, p).forces(pos, mass)
    perm = np.random.default_rng(9).permutation(len(pos))
    permuted = mesh_of(p).forces(pos[perm], mass[perm])
    for a, b, c in zip(first, fresh, permuted):
        assert np.array_equal(a, b)
        assert np.array_equal(a[perm], c)       # integer sums: no rounding to reorder


def test_sides_it_cannot_take_are_refused_in_one_line(runtime, mesh_of):
    for n in (24, 4096):
        with pytest.raises(MeshSizeError, match='memory.mesh = "float64"') as err:
            CompactMesh(runtime, Periodic(L, n))
        assert "\n" not in str(err.value)
    one, total = compact_mesh_bytes(1024)
    assert one == 4 * 2 ** 30 and 8 * 2 ** 30 < total < 8.1 * 2 ** 30


@pytest.mark.parametrize("n_mesh", [8, 32])
def test_the_mesh_allocates_what_compact_mesh_bytes_says(runtime, mesh_of, clumps, n_mesh):
    """What the memory plan counts is all a mesh holds, whatever the particles: nothing
    per particle stays."""
    pos, mass = clumps
    gc.collect()                        # nothing of earlier tests freed while counting
    before = runtime.memory.total
    mesh = CompactMesh(runtime, Periodic(L, n_mesh, asmth=0.5, rcut=2.0))
    mesh.forces(pos, mass)
    assert runtime.memory.total - before == compact_mesh_bytes(n_mesh)[1]


def test_no_particles_give_no_force(mesh_of):
    acc, pot = mesh_of(Periodic(L, 16, rcut=4.5)).forces(np.zeros((0, 3)), 1.0)
    assert acc.shape == (0, 3) and pot.shape == (0,)
