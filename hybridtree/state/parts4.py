"""A device state's force parts kept as the walk computes them (:class:`.device.DeviceState`
with ``pot_part``): a float4 per particle and part (ax, ay, az, pot; float32) and the
part's net force apart, its sums (Σ m a_x, Σ m a_y, Σ m a_z, Σ m) as 4 float64 in
``state.net[part]``.  Wherever the acceleration is used it is widened as cl/state.cl
``wide4`` does: (double) a - Σ m a / Σ m, the bits of the float64 part that the net force
was subtracted from, so a run with such a state writes the same bits as one with float64
parts.  Here: the buffers, the widened copies for downloads, the finite check.
Internal units (G = 1)."""

from __future__ import annotations

import numpy as np
import pyopencl as cl

from ..device.kernels import kernel, launch
from ..device.transfer import download as download_columns
from ..device.transfer import read_small, upload
from ..particles import Particles
from .mass import host_columns
from .vel32 import host_vel, widen as widen_vel

__all__ = ["download", "finite", "init", "potential", "rows", "widen"]


def init(s, p: Particles, mass: np.ndarray) -> None:
    """The buffers of state ``s`` (its rt, n, parts, id_type, clock set): the particles
    uploaded (``mass``: the masses as ``s`` keeps them, one or a mass per particle), each
    part zeros (16 bytes a particle), its net force none."""
    rt, n = s.rt, s.n
    with s.clock.device("transfer"):
        arrays = [np.asarray(a, t) for a, t in ((p.pos, np.float64), (p.vel, s.vel_type),
                                                (mass, np.float64), (p.ids, s.id_type),
                                                (p.types, np.uint8))]
        s.pos, s.vel, s.mass, s.ids, s.types = upload(rt, arrays, [None] * 5)
        s.pot = None
        s.acc, s.net = {}, {}
        for part in s.parts:
            s.acc[part] = rt.empty(16 * n)
            if n:
                cl.enqueue_fill_buffer(rt.queue, s.acc[part], np.float32(0), 0, 16 * n)
            s.net[part] = rt.empty(32)          # written by the net force's sums
            cl.enqueue_fill_buffer(rt.queue, s.net[part], np.float64(0), 0, 32)
    s.capacity = n
    kernel(rt, "state.cl", "kick4", s.vel_defines)   # built now: a failed build fails here


def widen(s, k: int, lo: int, out: cl.Buffer, parts: list[str]) -> None:
    """``out`` (k x 3 float64) := the acceleration of rows lo .. lo + k - 1 of ``s``'s
    ``parts`` (one or two, added as cl/state.cl ``add`` adds float64 parts: ``widen4``)."""
    a, b = parts[0], parts[-1]
    launch(s.rt, "state.cl", "widen4", k, np.int32(k), np.uint64(lo), np.int32(len(parts) > 1),
           s.acc[a], s.net[a], s.acc[b], s.net[b], out)


def potential(s, k: int, lo: int, out: cl.Buffer) -> None:
    """``out`` (k float64) := the potential of rows lo .. lo + k - 1 (``pot_part``'s w)."""
    launch(s.rt, "state.cl", "pot4", k, np.int32(k), np.uint64(lo), s.acc[s.pot_part], out)


def download(s, order, p: Particles, ids: np.ndarray) -> None:
    """:meth:`.device.DeviceState.download` of ``s`` into ``p`` (``ids``: the IDs' host
    array): acc and pot widened on the device into one scratch buffer of 24 bytes a
    particle, one after the other."""
    n = s.n
    columns, vel = host_vel(s, host_columns(s, [(s.pos, p.pos), (s.vel, p.vel),
                                                (s.mass, p.mass), (s.ids, ids),
                                                (s.types, p.types)], p.mass), p.vel)
    with s.clock.host("transfer", wait=True):
        if order is None or n == 0:
            get = download_columns
        else:
            def get(rt, cols):
                s.to_caller(cols, *order)
        get(s.rt, columns)
        widen_vel(vel, p.vel)
        if n == 0:
            return
        wide = s.rt.empty(24 * n)
        try:
            widen(s, n, 0, wide, list(s.parts))
            get(s.rt, [(wide, p.acc)])
            potential(s, n, 0, wide)
            get(s.rt, [(wide, p.pot)])
        finally:
            wide.release()
    if s.narrow:
        p.ids[:] = ids


def rows(s, lo: int, k: int, p: Particles, columns: list) -> None:
    """:meth:`.device.DeviceState.download_rows` of ``s``: rows lo .. lo + k - 1 of the
    (buffer, host array) ``columns``, then acc and pot widened, through 24 bytes a row of
    device scratch."""
    with s.clock.host("transfer", wait=True):
        tmp = s.rt.empty(24 * k)
        try:
            for buf, host in columns:
                s.rows(buf, lo, host, tmp)
            widen(s, k, lo, tmp, list(s.parts))
            download_columns(s.rt, [(tmp, p.acc)])
            potential(s, k, lo, tmp)
            download_columns(s.rt, [(tmp, p.pot)])
        finally:
            tmp.release()


def finite(s, red, vel: bool = True) -> bool:
    """Whether ``s``'s positions, velocities (not with ``vel`` False: float32 ones are
    checked apart) and every part's acceleration (widened, as the kick takes it:
    cl/state.cl ``nonfinite4``) are finite; the parts' checks are enqueued before the
    float64 columns' (``red``: the runtime's reducer), whose read waits for them."""
    n = s.n
    if s.flag is None:
        s.flag = s.rt.empty(4)
    cl.enqueue_fill_buffer(s.rt.queue, s.flag, np.int32(0), 0, 4)
    for part in s.parts:
        launch(s.rt, "state.cl", "nonfinite4", n, np.int32(n), s.acc[part], s.net[part],
               s.flag)
    ok = red.all_finite(n, (s.pos, 3 * n), *([(s.vel, 3 * n)] if vel else []))
    return ok and not read_small(s.rt, np.empty(1, np.int32), s.flag)[0]
