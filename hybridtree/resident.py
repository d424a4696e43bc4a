"""The hybrid tree's hard steps with the particles kept on the device.

A hard step does little work (the hard walk has 14-21 % of a full walk's interactions),
so on a GPU its fixed costs decide the hybrid tree's gain: moving positions to the
device and accelerations back, float64 kicks and drifts on the host, checks of the
input.  Here one soft step uploads positions, velocities, masses and the hard
acceleration once, does the n_hard kicks, drifts, tree builds and hard walks on the
device (float64 state, cl/resident.cl) and downloads the state and the soft force once.
Needs a device with double precision (cl_khr_fp64: NVIDIA, AMD, PoCL); elsewhere
:func:`hybridtree.integrate.hybrid_step` does the same step on the host.

The arithmetic of the state is the host's (float64, the same operations in the same
order); the results differ from the host step only where float64 sums are reduced in a
different order (the net force) — at the 1e-16 level.
"""

from __future__ import annotations

import time
from dataclasses import dataclass

import numpy as np
import pyopencl as cl

from .gravity import Forces
from .integrate import HybridModel, Timers
from .opencl import Runtime, get_runtime
from .transfer import download, upload
from .tree.device_build import DeviceArrays, build_device_tree
from .treewalk import tree_forces


@dataclass
class DeviceParticles:
    """float64 positions, velocities (n x 3) and masses (n) on ``rt``'s device."""

    rt: Runtime
    n: int
    pos: cl.Buffer
    vel: cl.Buffer
    mass: cl.Buffer

    @property
    def arrays(self) -> DeviceArrays:
        return DeviceArrays(self.pos, self.mass, self.n)

    def _run(self, name: str, *args, defines: dict | None = None) -> None:
        knl = self.rt.kernel("resident.cl", name, defines, fast_math=False)
        wg = min(256, self.rt.max_work_group_size(knl))
        knl(self.rt.queue, (-(-self.n // wg) * wg,), (wg,), np.int32(self.n), *args)

    def kick(self, acc: cl.Buffer, dt: float, shift: np.ndarray) -> None:
        """vel += dt (acc - shift); ``shift`` (3,): the net acceleration to remove."""
        self._run("kick", np.float64(dt), *(np.float64(s) for s in shift), acc, self.vel)

    def drift(self, dt: float) -> None:
        """pos += dt vel."""
        self._run("drift", np.float64(dt), self.vel, self.pos)

    def net_acceleration(self, acc: cl.Buffer) -> np.ndarray:
        """Mass-weighted mean of ``acc`` (3,), as GravityModel._net removes it."""
        return _weighted_mean(self.rt, self.n, self.mass, acc)


def _f64(a: np.ndarray) -> np.ndarray:
    return np.asarray(a, np.float64)


def _weighted_mean(rt: Runtime, n: int, mass: cl.Buffer, acc: cl.Buffer) -> np.ndarray:
    wg = 256 if rt.info.kind == "gpu" else 64
    knl = rt.kernel("resident.cl", "weighted_sum", {"WG": wg}, fast_math=False)
    n_wg = max(1, min(-(-n // wg), 4 * rt.info.compute_units))
    part = rt.empty(32 * n_wg)
    knl(rt.queue, (n_wg * wg,), (wg,), np.int32(n), mass, acc, part)
    sums = np.empty((n_wg, 4))
    cl.enqueue_copy(rt.queue, sums, part)
    total = sums.sum(axis=0)
    return total[:3] / total[3] if total[3] > 0 else np.zeros(3)


def hard_net_acceleration(rt: Runtime, acc: np.ndarray, mass: np.ndarray) -> np.ndarray:
    """The net hard acceleration as the device steps compute it (the same sums in the
    same order), for hard forces computed on the host side: a run that restarts from a
    snapshot then continues bit for bit."""
    d_mass, d_acc = upload(rt, [_f64(mass), _f64(acc)], [None, None])
    return _weighted_mean(rt, len(mass), d_mass, d_acc)


def can_keep_on_device(model: HybridModel) -> bool:
    """Whether :func:`hybrid_step_on_device` can run ``model``'s step."""
    if model.build != "device" or model.method != "tree":
        return False
    return get_runtime(model.device or None).has_fp64


def _hard_force(model: HybridModel, p: DeviceParticles, mass: np.ndarray,
                parts: tuple[str, ...]) -> tuple[cl.Buffer, np.ndarray, dict]:
    """Build the tree of the device state and walk ``parts`` ("hard" first; "soft" is
    downloaded).  Returns (hard acc buffer, its net acceleration, {part: (acc, pot)})."""
    t0 = time.perf_counter()
    tree = build_device_tree(p.rt, p.arrays, None, theta=model.theta, n_leaf=model.n_leaf,
                             multipole=model.multipole)
    build = time.perf_counter() - t0
    out: dict = {}
    hard = shift = None
    for part in parts:
        t1 = time.perf_counter()
        keep = part == "hard"
        acc, pot, n_pp, n_pc, tw = tree_forces(p.rt, tree, model.eps, model.n_group or None,
                                               split=model.changeover, part=part,
                                               resident=keep)
        f = Forces(acc, pot, n_pp, n_pc, device=p.rt.info.label, timings=tw)
        if keep:
            hard = acc
            shift = (p.net_acceleration(acc) if model.remove_net_force else np.zeros(3))
        else:
            out[part] = (model._net(f.acc, mass), f.pot)
        model._account(f, part, time.perf_counter() - t1 + build, build)
        build = 0.0        # the tree's build is charged to the first part
    assert hard is not None and shift is not None
    return hard, shift, out


def hybrid_step_on_device(pos: np.ndarray, vel: np.ndarray, acc_hard: np.ndarray,
                          acc_soft: np.ndarray, mass: np.ndarray, dt: float,
                          model: HybridModel, timers: Timers | None = None):
    """:func:`hybridtree.integrate.hybrid_step` with the hard steps on the device.

    Same arguments and results (pos and vel updated in place; returns pos, vel,
    acc_hard, acc_soft, pot at the end of the step).
    """
    t_int = 0.0
    t0 = time.perf_counter()
    n_hard = model.n_hard
    h = dt / n_hard
    vel += (0.5 * dt) * acc_soft
    rt = get_runtime(model.device or None)
    d_pos, d_vel, d_mass, acc_h = upload(rt, [_f64(a) for a in (pos, vel, mass, acc_hard)],
                                         [None] * 4)
    p = DeviceParticles(rt, len(pos), d_pos, d_vel, d_mass)
    shift = np.zeros(3)            # acc_hard arrives with its net force already removed
    pot = None
    for k in range(n_hard):
        p.kick(acc_h, 0.5 * h, shift)
        p.drift(h)
        rt.queue.finish()
        t_int += time.perf_counter() - t0
        last = k == n_hard - 1
        acc_h, shift, soft = _hard_force(model, p, mass, ("hard", "soft") if last else ("hard",))
        if last:
            acc_soft, pot = soft["soft"]
        t0 = time.perf_counter()
        p.kick(acc_h, 0.5 * h, shift)
    acc_hard = np.empty((p.n, 3))
    download(rt, [(acc_h, acc_hard), (p.pos, pos), (p.vel, vel)])
    acc_hard -= shift
    vel += (0.5 * dt) * acc_soft
    if timers is not None:
        timers.integrate += t_int + time.perf_counter() - t0
    return pos, vel, acc_hard, acc_soft, pot
