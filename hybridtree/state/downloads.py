"""Host copies of a device state's particles (:class:`.device.DeviceState`'s
``download`` and ``download_rows``): every column through pinned memory on GPUs; a state
of one mass fills the host's mass column with it (:mod:`.mass`).  Internal units."""

from __future__ import annotations

import numpy as np
import pyopencl as cl

from ..device.kernels import launch
from ..device.transfer import download as download_columns
from ..particles import Particles
from . import parts4
from .mass import host_columns
from .vel32 import host_vel, widen

__all__ = ["download", "download_rows"]


def download(s, order: tuple[int, cl.Buffer | None] | None = None) -> Particles:
    """Host copies of the particles (through pinned memory on GPUs; acc: the sum of
    the parts, added on the host: the device's ``add`` bits, without a third
    acceleration buffer on the device).  ``order = (lo, table)``: put them in the
    caller's order on the device first -- the IDs must be the range lo .. lo + n - 1;
    a particle goes to row ``table[id - lo]`` (int32 device buffer), or ``id - lo``
    without a table."""
    n = s.n
    p = Particles(np.empty((n, 3)), np.empty((n, 3)), np.empty(n), np.empty(n, np.uint64),
                  np.empty((n, 3)), np.empty(n), np.zeros(n, np.uint8))
    ids = np.empty(n, s.id_type) if s.narrow else p.ids
    if s.float4:
        parts4.download(s, order, p, ids)
        return p
    two = "full" not in s.acc and n > 0
    other = np.empty((n, 3)) if two else None
    columns = [(s.pos, p.pos), (s.vel, p.vel), (s.mass, p.mass),
               (s.ids, ids), (s.acc[s.parts[0]], p.acc), (s.pot, p.pot),
               (s.types, p.types)] + ([(s.acc[s.parts[1]], other)] if two else [])
    columns, vel = host_vel(s, host_columns(s, columns, p.mass), p.vel)
    with s.clock.host("transfer", wait=True):
        if order is None or n == 0:
            download_columns(s.rt, columns)
        else:
            s.to_caller(columns, *order)
    widen(vel, p.vel)
    if two:
        p.acc += other          # one rounded add, as cl/state.cl add (total_acc)
    if s.narrow:
        p.ids[:] = ids
    return p


def download_rows(s, lo: int, hi: int) -> Particles:
    """Host copies of rows lo .. hi - 1 of the state's order: a chunk of what
    :meth:`download` without ``order`` gives, the same bits (acc: the parts added on
    the device, as there), so that a snapshot written chunk by chunk holds one chunk on
    the host.  Device scratch: 24 bytes per row of the chunk (three times that for an
    acceleration of two parts)."""
    k = hi - lo
    assert 0 <= lo <= hi <= s.n, (lo, hi, s.n)
    p = Particles(np.empty((k, 3)), np.empty((k, 3)), np.empty(k), np.empty(k, np.uint64),
                  np.empty((k, 3)), np.empty(k), np.zeros(k, np.uint8))
    if k == 0:
        return p
    q = s.rt.queue
    acc = [s.acc[s.parts[0]]] if "full" in s.acc else [s.acc[x] for x in s.parts]
    ids = np.empty(k, s.id_type) if s.narrow else p.ids
    columns, vel = host_vel(s, host_columns(s, [(s.pos, p.pos), (s.vel, p.vel),
                                                (s.mass, p.mass), (s.ids, ids),
                                                (s.types, p.types)], p.mass), p.vel)
    if s.float4:         # acc and pot widened on the device, a chunk at a time
        parts4.rows(s, lo, k, p, columns)
        widen(vel, p.vel)
        if s.narrow:
            p.ids[:] = ids
        return p
    columns.insert(len(columns) - 1, (s.pot, p.pot))
    with s.clock.host("transfer", wait=True):
        tmp = [s.rt.empty(24 * k) for _ in range(1 + (len(acc) > 1) * 2)]
        try:
            for buf, host in columns:
                s.rows(buf, lo, host, tmp[0])
            for part, out in zip(acc, tmp[1:] if len(acc) > 1 else tmp):
                cl.enqueue_copy(q, out, part, byte_count=24 * k, src_offset=24 * lo)
            if len(acc) > 1:        # the sum of the parts, as total_acc adds them
                launch(s.rt, "state.cl", "add", 3 * k, np.int64(3 * k), tmp[1],
                       tmp[2], tmp[0])
            download_columns(s.rt, [(tmp[0], p.acc)])
        finally:
            for b in tmp:
                b.release()
    widen(vel, p.vel)
    if s.narrow:
        p.ids[:] = ids
    return p
