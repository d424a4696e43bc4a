"""A device state's velocities kept as float32 (:class:`.device.DeviceState` ``vel32``,
memory.velocities = "float32": 12 bytes a particle less, issue 56).  The state's
kernels are built with VEL_T float (cl/state.cl): a kick computes in double and rounds
each velocity once, a drift widens it exactly.  Here: those kicks and drifts, the
downloads' float32 host column (copied into the caller's float64 array: exact), the
finite check of the velocities apart from the float64 columns', and the builds such a
state asks for (:func:`vel32_option_sets`).  Velocities in internal units."""

from __future__ import annotations

from types import MappingProxyType

import numpy as np
import pyopencl as cl

from ..device.kernels import launch, option_sets
from ..device.reduce import reduce_defines, reduce_work_group
from ..device.runtime import DeviceInfo
from ..device.transfer import read_small

__all__ = ["VEL32", "drift", "finite", "host_vel", "kick", "vel32_option_sets", "widen"]

#: the state.cl (and reduce.cl) define of float32 velocities
VEL32 = MappingProxyType({"VEL_T": "float"})


@option_sets
def vel32_option_sets(info: DeviceInfo) -> list[tuple[str, dict]]:
    """The builds of a state of float32 velocities: state.cl and blocks.cl (block steps'
    kicks and bins) with VEL_T float, and the reductions' reduce.cl with it
    (:func:`hybridtree.device.reduce.reducer` ``vel32``)."""
    from ..device.multisection import TRIALS
    return [("state.cl", dict(VEL32)), ("blocks.cl", dict(VEL32))] + [
        ("reduce.cl", {**reduce_defines(reduce_work_group(info), nr * TRIALS, info.sum_mode),
                       **VEL32}) for nr in (3, 1)]


def kick(s, dt: float, a: cl.Buffer) -> None:
    """vel += dt a (``a``: n x 3 float64) of state ``s`` of float32 velocities: cl/state.cl
    kick_vel (in double, rounded once)."""
    launch(s.rt, "state.cl", "kick_vel", 3 * s.n, np.int64(3 * s.n), np.float64(dt), a,
           s.vel, defines=s.vel_defines)


def drift(s, dt: float) -> None:
    """pos += dt vel of state ``s`` of float32 velocities (cl/state.cl drift_vel)."""
    launch(s.rt, "state.cl", "drift_vel", 3 * s.n, np.int64(3 * s.n), np.float64(dt),
           s.vel, s.pos, defines=s.vel_defines)


def host_vel(s, columns: list, host: np.ndarray) -> tuple[list, np.ndarray | None]:
    """The (device buffer, host array) ``columns`` of a download from state ``s`` with
    the velocities' column (host array ``host``, float64) downloaded into a float32 array
    of its own where ``s`` keeps float32 velocities: (columns, that array or None).  The
    caller copies it into ``host`` after the transfer (:func:`widen`)."""
    if not s.vel32:
        return columns, None
    tmp = np.empty(host.shape, np.float32)
    return [(b, tmp if h is host else h) for b, h in columns], tmp


def widen(tmp: np.ndarray | None, host: np.ndarray) -> None:
    """``host`` := ``tmp`` widened to float64 (exact; nothing where ``tmp`` is None)."""
    if tmp is not None:
        host[:] = tmp


def finite(s) -> bool:
    """Whether every float32 velocity of state ``s`` is finite (cl/state.cl
    nonfinite_vel; the flag is ``s.flag``, shared with :func:`.parts4.finite`, which
    runs after this has read it)."""
    if s.flag is None:
        s.flag = s.rt.empty(4)
    cl.enqueue_fill_buffer(s.rt.queue, s.flag, np.int32(0), 0, 4)
    launch(s.rt, "state.cl", "nonfinite_vel", 3 * s.n, np.int64(3 * s.n), s.vel, s.flag,
           defines=s.vel_defines)
    return not read_small(s.rt, np.empty(1, np.int32), s.flag)[0]
