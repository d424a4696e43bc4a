"""A device state filled row by row (:meth:`.device.DeviceState.for_rows`): a drawn model's
blocks uploaded as they are drawn and moved to its centre-of-mass frame on the device, so
that the host never holds the particles all at once.  Internal units (G = 1)."""

from __future__ import annotations

import numpy as np
import pyopencl as cl

from ..device.kernels import launch
from ..particles import Particles

__all__ = ["narrow_ids", "shift_rows", "upload_rows"]

#: IDs below this fit the device's uint32 IDs (a state's uploads check them)
ID32 = 1 << 32


def narrow_ids(ids: np.ndarray) -> bool:
    """Whether every one of ``ids`` fits a uint32 (a state keeps them so on the device)."""
    ids = np.asarray(ids)
    return len(ids) == 0 or (int(ids.min()) >= 0 and int(ids.max()) < ID32)


def upload_rows(s, lo: int, p: Particles,
                columns: tuple[str, ...] = ("pos", "vel", "mass", "ids", "types")) -> None:
    """Rows lo .. lo + len(p) - 1 of state ``s``'s ``columns`` := ``p``'s (the IDs as
    the state keeps them: ValueError for one of 2^32 or more in uint32 IDs; a state of
    one mass takes no masses, ``p``'s are that mass; float32 velocities: ``p``'s rounded
    once).  The copies are done when this
    returns: the caller may reuse ``p``."""
    k = len(p)
    assert 0 <= lo and lo + k <= s.n, (lo, k, s.n)
    if k == 0:
        return
    types = {"pos": np.float64, "vel": s.vel_type, "mass": np.float64,
             "ids": s.id_type, "types": np.uint8}
    if "ids" in columns and s.narrow and int(p.ids.max()) >= ID32:
        raise ValueError("IDs of 2^32 or more in a state of uint32 IDs")
    if "mass" in columns and not s.mass_step:
        assert np.all(np.asarray(p.mass) == s.mass_value), "rows of another mass"
        columns = tuple(c for c in columns if c != "mass")
    with s.clock.device("transfer"):
        for name in columns:
            host = np.ascontiguousarray(getattr(p, name), types[name])
            cl.enqueue_copy(s.rt.queue, getattr(s, name), host,
                            dst_offset=lo * (host.nbytes // k), is_blocking=True)


def shift_rows(s, dpos: np.ndarray, dvel: np.ndarray) -> None:
    """pos -= dpos and vel -= dvel ((3,) float64 each) for every particle of state ``s``,
    on the device (cl/state.cl shift3 with the negated vectors: one rounded add per
    value, the bits of the host's ``pos - dpos``; no scratch).  Float32 velocities:
    shift3_vel, the float64 subtraction rounded once to float32, the bits of
    ``(vel.astype(np.float64) - dvel).astype(np.float32)``."""
    if s.n == 0:
        return
    with s.clock.device("integrate"):
        for col, d, name in ((s.pos, dpos, "shift3"),
                             (s.vel, dvel, "shift3_vel" if s.vel32 else "shift3")):
            c = -np.asarray(d, np.float64).reshape(3)
            launch(s.rt, "state.cl", name, s.n, np.int64(s.n),
                   *(np.float64(x) for x in c), col,
                   defines=s.vel_defines if name == "shift3_vel" else None)
