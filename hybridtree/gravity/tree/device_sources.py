"""Particles onto the device for a tree build: their extent and the tree's cube
(cl/prepare.cl), and the float64 arrays the build forms its keys and float32 hi/lo pairs
from (or, without double precision, the pairs split on the host).  Units: the caller's lengths and masses."""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import pyopencl as cl

from ...device.kernels import launch, spread_local
from ...device.runtime import DeviceInfo, Runtime, fit_work_group, pack4, split_hi_lo
from ...device.transfer import allocator, read_small, upload
from .morton import BITS, Cube, bounding_cube

__all__ = ["DeviceArrays", "Sources", "cube_buffers", "device_cube", "device_extent",
           "extent_work_group", "upload_sources"]


def device_cube(pos: np.ndarray) -> Cube:
    """Bounding cube with a power-of-two side, centred on the particles' extent."""
    return bounding_cube(pos, power_of_two=True)


def extent_work_group(info: DeviceInfo) -> int:
    """Work-group size of prepare.cl's ``extent`` (its WG define): 256 on GPUs, 64 on CPUs,
    within the device's work-group limit and local memory (48 bytes per work-item), a
    power of two (its tree reduction halves it)."""
    return fit_work_group(256 if info.kind == "gpu" else 64, info.work_group_limit(),
                          info.local_mem_limit() // 48)


def device_extent(rt: Runtime, pos: cl.Buffer, n: int, alloc=None
                  ) -> tuple[np.ndarray, np.ndarray]:
    """(lower, upper) corner of the box around n float64 positions on the device (the
    work-groups' boxes reduced on the device, 48 bytes read back); n = 0 gives (inf, -inf)."""
    if n == 0:
        return np.full(3, np.inf), np.full(3, -np.inf)
    ext = read_small(rt, np.empty(6), _enqueue_extent(rt, pos, n, alloc))
    return ext[:3], ext[3:]


def _enqueue_extent(rt: Runtime, pos: cl.Buffer, n: int, alloc=None) -> cl.Buffer:
    """Enqueue the extent of n >= 1 positions: a buffer whose first row is min x, y, z,
    max x, y, z (float64)."""
    alloc = allocator(rt, alloc)
    wg = extent_work_group(rt.info)
    n_wg = max(1, min(-(-n // wg), 4 * rt.info.compute_units))
    part = alloc("extent", 48 * n_wg)
    i32 = np.int32
    launch(rt, "prepare.cl", "extent", n_wg * wg, i32(n), i32(3), i32(0), pos, part,
           defines={"WG": wg}, local=wg, fixed=True)
    launch(rt, "prepare.cl", "extent", wg, i32(n_wg), i32(6), i32(3), part, part,
           defines={"WG": wg}, local=wg, fixed=True)        # the groups' rows, in place
    return part


def cube_buffers(rt: Runtime, cube: Cube | None, pos: cl.Buffer | None = None, n: int = 0,
                 alloc=None) -> tuple[cl.Buffer | None, cl.Buffer]:
    """(cube_d, cube_f): the cube on the device for the kernels that need it (cl/prepare.cl
    extent_cube's layout: float64 corner, side, centre; float32 side and key scale 2^21 /
    side), written from ``cube`` where the host has it, else found on the device from the n
    float64 positions ``pos`` (n >= 1), enqueued, nothing read back; cube_d is None
    without double precision."""
    alloc = allocator(rt, alloc)
    cube_d = alloc("cube_d", 64) if rt.has_fp64 else None
    cube_f = alloc("cube_f", 8)
    if cube is None:
        launch(rt, "prepare.cl", "extent_cube", 1, _enqueue_extent(rt, pos, n, alloc), cube_d,
               cube_f)
        return cube_d, cube_f
    q = rt.queue
    for k, v in enumerate((np.float32(cube.side), np.float32(2.0**BITS / cube.side))):
        cl.enqueue_fill_buffer(q, cube_f, v, 4 * k, 4)
    if cube_d is not None:
        row = [*cube.corner, cube.side, *cube.centre]
        for k, v in enumerate(row):
            cl.enqueue_fill_buffer(q, cube_d, np.float64(v), 8 * k, 8)
    return cube_d, cube_f


@dataclass
class DeviceArrays:
    """Particles already on the device (hybridtree.state): float64 positions (n x 3)
    and masses (n), in the caller's order; ``eps``: float32 softenings (n), one per
    particle (None: one softening for all, given to the walk); ``mass_step``: 1 for a
    mass per particle, 0 for one mass for all (``mass[0]``: a state of equal masses,
    :class:`hybridtree.state.DeviceState`)."""

    pos: cl.Buffer
    mass: cl.Buffer
    n: int
    eps: cl.Buffer | None = None
    mass_step: int = 1


@dataclass
class Sources:
    """Where a tree build finds its particles (:func:`upload_sources`): the cube as the
    host has it (None: found on the device, not read back) and on the device
    (:func:`cube_buffers`), and either the float64 arrays on the device (``arrays``: the
    build forms the keys and the tree order's hi/lo pairs from them, cl/prepare.cl
    ``split_keys`` and ``split_gather``) or float4 hi/lo pairs in the caller's order
    (``hi``, ``lo``: a device without double precision, or the host's split asked for)."""

    cube: Cube | None
    cube_d: cl.Buffer | None
    cube_f: cl.Buffer
    arrays: DeviceArrays | None = None
    hi: cl.Buffer | None = None
    lo: cl.Buffer | None = None


def upload_sources(rt: Runtime, pos: np.ndarray | DeviceArrays, mass: np.ndarray | None,
                   cube: Cube | None, on_device: bool | None = None, alloc=None,
                   eps: np.ndarray | None = None) -> Sources:
    """The particles on the device for a tree build (:class:`Sources`).  Host split: the
    float4 hi/lo pairs relative to the cube centre, w = mass (hi) and the softening (lo:
    ``eps``, one per particle; else 0).

    ``on_device`` (default: where the device has double precision): upload the float64
    arrays as they are (into the transfer scratch) and leave the split to the device
    (cl/prepare.cl); otherwise split on the host.  Both give the same bits.
    :class:`DeviceArrays` are used where they are (double precision needed).
    ``alloc``: a :class:`hybridtree.device.transfer.Workspace` for the device buffers.
    """
    alloc = allocator(rt, alloc)
    resident = isinstance(pos, DeviceArrays)
    n = pos.n if resident else len(pos)
    if on_device is None:
        on_device = rt.has_fp64
    if not resident and (not on_device or n == 0):
        cube = cube or device_cube(pos)
        hi, lo = split_hi_lo(pos - cube.centre)
        # 16 + 16 bytes a particle (fresh buffers, freed with the build)
        return Sources(cube, *cube_buffers(rt, cube, alloc=alloc),
                       hi=rt.to_device(pack4(hi, mass)),
                       lo=rt.to_device(pack4(lo, 0.0 if eps is None else eps)))
    if not rt.has_fp64:         # prepare.cl is float64 throughout
        raise ValueError("particles kept or prepared on the device need double precision "
                         f"(cl_khr_fp64), which {rt.info.label} lacks")
    if resident:
        arrays = pos
    else:
        d_pos, d_mass = upload(rt, [np.asarray(pos, np.float64), np.asarray(mass, np.float64)],
                               ["upload_pos", "upload_mass"])
        d_eps = None if eps is None else upload(rt, [np.asarray(eps, np.float32)],
                                                ["upload_eps"])[0]
        arrays = DeviceArrays(d_pos, d_mass, n, d_eps)
    if n == 0 and cube is None:
        cube = Cube(corner=np.full(3, -0.5), side=1.0)     # no extent: side 1, any centre
    return Sources(cube, *cube_buffers(rt, cube, arrays.pos, n, alloc), arrays=arrays)
