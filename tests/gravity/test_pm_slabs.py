"""The slab layout of a mesh shared by many processes (hybridtree.gravity.pm_slabs); the
forces themselves are tested under mpiexec (tests/parallel/test_mpi_periodic.py)."""

import numpy as np
import pytest

from hybridtree.gravity.periodic import Periodic
from hybridtree.gravity.pm_slabs import SlabMesh, slab_bounds, y_planes


@pytest.mark.parametrize("n_mesh, size", [(12, 2), (13, 3), (20, 3), (64, 4), (17, 8),
                                          (16, 8)])
def test_every_plane_has_one_owner_and_mirrors_stay_together(n_mesh, size):
    x = slab_bounds(n_mesh, size)
    assert x[0] == 0 and x[-1] == n_mesh and (np.diff(x) >= 1).all()
    assert np.diff(x).max() - np.diff(x).min() <= 1          # as even as can be
    ys = y_planes(n_mesh, size)
    assert np.array_equal(np.sort(np.concatenate(ys)), np.arange(n_mesh))
    for planes in ys:
        assert len(planes) > 0                                 # n_mesh >= 2 size
        assert set((n_mesh - planes) % n_mesh) == set(planes)  # -k where k is


class _Comm:
    rank, size = 0, 8


def test_a_mesh_too_small_for_its_processes_is_refused(runtime):
    with pytest.raises(ValueError, match=r"pm_grid >= 2 x processes \(16\)"):
        SlabMesh(runtime, Periodic(1.0, 12, rcut=4.5), _Comm())


def test_meshes_the_device_cannot_hold_are_refused_before_allocating(runtime):
    """The whole mesh and one process's slabs are refused with the sizes they need and
    what to do, from the device's limits alone (nothing is allocated)."""
    import dataclasses
    from types import SimpleNamespace

    from hybridtree.gravity import pm_device, pm_slabs

    small = SimpleNamespace(info=dataclasses.replace(runtime.info, max_mem_alloc_size=2**20,
                                                     global_mem_size=2**30, name="tiny"),
                            device=runtime.device)
    with pytest.raises(ValueError, match=r"a 64\^3 PM mesh needs .* 4 MiB .* tiny allows 1 MiB"
                                         r".*: take a smaller pm_grid$"):
        pm_device._check_fits(small, 64)
    pm_device._check_fits(small, 16)                 # 64 KiB a mesh array
    with pytest.raises(ValueError, match=r"this process's slabs of a 64\^3 PM mesh need .* "
                                         r"1 MiB per buffer.*more processes$"):
        pm_slabs._check_part_fits(small, 64, 32, 32)
    pm_slabs._check_part_fits(small, 64, 8, 8)      # 512 KiB the largest
