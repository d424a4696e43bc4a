"""One entry point for gravity: accelerations and potentials of sinks from sources.

Units: G = 1; positions, masses and the softening length eps in any consistent
units.  Forces use Plummer softening: a source of mass m at separation r gives
acceleration m r_vec / (r^2 + eps^2)^(3/2) and potential -m / (r^2 + eps^2)^(1/2).
A particle never acts on itself.  Results come back in float64, in the caller's
particle order; the device computes in float32.
"""

from __future__ import annotations

import time
from dataclasses import dataclass, field

import numpy as np

import pyopencl as cl

from ..device.clock import Clock
from .direct import direct_forces
from ..device.choice import get_runtime, memory_needed
from ..device.reduce import reducer
from ..device.transfer import Workspace, download, upload
from .splitting import Changeover
from ..particles import shaped_particles, validate_particles
from .tree import MULTIPOLES, Cube, build_tree
from .tree.device_build import DeviceArrays, build_device_tree
from .walk import tree_forces, walk_into

METHODS = ("tree", "direct")

#: Cell opening criteria of the tree walk: "geometric", (l / theta + s)^2 < d^2; or
#: "relative" (GADGET's), G M l^p / d^(p+2) <= alpha |a_old|, p = 2 for monopoles and 3
#: with quadrupoles (cl/walkcommon.cl; docs/physics.md).
OPENINGS = ("geometric", "relative")

#: Where the tree is built: "device" (cl/treebuild.cl, the tree stays on the device) or
#: "host" (numpy, the reference).  Given the same cube both give the same cells; the
#: device's cube has a power-of-two side.
BUILDS = ("device", "host")

__all__ = ["BUILDS", "Forces", "METHODS", "OPENINGS", "accelerations", "direct_reference",
           "split_accelerations", "validate_particles"]


@dataclass
class Forces:
    """Result of a force computation (float64, caller's order, G = 1).

    ``n_pp``/``n_pc``: interactions per sink.  On the device-resident path they stay on
    the device until first read (a download of 8 bytes per sink that most callers never
    need); ``interactions`` is their total, summed on the device.
    """

    acc: np.ndarray                  # (n, 3) acceleration
    pot: np.ndarray                  # (n,) potential
    _n_pp: np.ndarray | None = None  # (n,) particle-particle interactions per sink
    _n_pc: np.ndarray | None = None  # (n,) particle-cell interactions per sink
    device: str = ""
    timings: dict = field(default_factory=dict)   # seconds (and a few counts)
    _total: int | None = None
    _fetch: object = None            # () -> (n_pp, n_pc), for counts still on the device

    def _counts(self) -> None:
        if self._n_pp is None:
            self._n_pp, self._n_pc = self._fetch()
            self._fetch = None

    @property
    def n_pp(self) -> np.ndarray:
        self._counts()
        return self._n_pp

    @property
    def n_pc(self) -> np.ndarray:
        self._counts()
        return self._n_pc

    @property
    def interactions(self) -> int:
        if self._total is not None:
            return self._total
        return int(self.n_pp.sum() + self.n_pc.sum())


_WORK: dict[int, Workspace] = {}


def _resident_forces(rt, pos: np.ndarray, mass: np.ndarray, eps: float, theta: float,
                     n_leaf: int, n_group: int | None, multipole: str,
                     floor: tuple[float, np.ndarray, float] | None = None) -> Forces:
    """The tree force of particles on themselves through the device path of the run's
    force engine: one upload (pinned on GPUs), the values checked on the device, the
    tree built in kept buffers, results widened to float64 on the device, one download
    of acc and pot; interaction counts summed on the device (per sink: on demand).
    ``timings``: device seconds of upload, build, walk, download (device markers) and
    ``total`` (the host's clock from the upload on)."""
    n = len(pos)
    work = _WORK.get(id(rt.context))
    if work is None:
        work = _WORK[id(rt.context)] = Workspace(rt)
    clock = Clock(rt)
    red = reducer(rt)
    t0 = time.perf_counter()
    with clock.device("upload"):
        d_pos, d_mass = upload(rt, [pos, mass], ["upload_pos", "upload_mass"])
    if not (red.all_finite(n, (d_pos, 3 * n), (d_mass, n)) and float(mass.min()) >= 0.0):
        validate_particles(pos, mass)         # names the first bad particle
    with clock.device("build"):
        tree = build_device_tree(rt, DeviceArrays(d_pos, d_mass, n), None, theta=theta,
                                 n_leaf=n_leaf, multipole=multipole, alloc=work)
    acc_b, pot_b = work("api_acc", 24 * n), work("api_pot", 8 * n)
    if floor is not None:
        with clock.device("upload"):
            a_old = upload(rt, [floor[1]], ["api_acc_old"])[0]
        floor = (floor[0], a_old, floor[2])
    with clock.device("walk"):
        counts, n_groups, _ = walk_into(rt, tree, eps, acc_b, pot_b, n_group, floor=floor)
        total = sum(red.count_sum(n, counts))
        # per-sink counts (caller's order), kept for a later read (walk_into left them in
        # the workspace, which the next call overwrites)
        kept = rt.empty(8 * n)
        cl.enqueue_copy(rt.queue, kept, counts, byte_count=8 * n)
    acc, pot = np.empty((n, 3)), np.empty(n)
    with clock.device("download"):
        download(rt, [(acc_b, acc), (pot_b, pot)])
    t = clock.snapshot()
    t["total"] = time.perf_counter() - t0
    t["n_groups"] = n_groups

    def fetch() -> tuple[np.ndarray, np.ndarray]:
        cnt = np.empty((n, 2), np.int32)
        download(rt, [(kept, cnt)])
        return cnt[:, 0], cnt[:, 1]

    return Forces(acc, pot, device=rt.info.label, timings=t, _total=total, _fetch=fetch)


def _check_eps(eps: float) -> float:
    eps = float(eps)
    if not (np.isfinite(eps) and eps >= 0):
        raise ValueError(f"softening eps must be finite and >= 0, got {eps!r}")
    return eps


def _check_tree_knobs(n_leaf: int, n_group: int | None, multipole: str,
                      theta: float | None, build: str = "device") -> None:
    """ValueError for tree settings out of range (``theta=None``: not checked)."""
    if build not in BUILDS:
        raise ValueError(f"build must be one of {BUILDS}, got {build!r}")
    if multipole not in MULTIPOLES:
        raise ValueError(f"multipole must be one of {MULTIPOLES}, got {multipole!r}")
    if theta is not None and not (0.0 < theta <= 1.2):
        raise ValueError(f"theta must be in (0, 1.2], got {theta!r}")
    if not (1 <= n_leaf <= 1024 and (n_group is None or 1 <= n_group <= 1024)):
        raise ValueError(f"n_leaf and n_group must be in [1, 1024], got {n_leaf}, {n_group}")


def _build(rt, build: str, pos: np.ndarray, mass: np.ndarray, theta: float, n_leaf: int,
           multipole: str, cube: Cube | None = None):
    """The tree of ``pos`` built where ``build`` says (``cube``: default per builder)."""
    if build == "device":
        return build_device_tree(rt, pos, mass, theta=theta, n_leaf=n_leaf, multipole=multipole,
                                 cube=cube)
    return build_tree(pos, mass, theta=theta, n_leaf=n_leaf, multipole=multipole, cube=cube)


def _relative_floor(alpha: float, theta_max: float, theta_min: float, acc_old, n_sink: int
                    ) -> tuple[float, np.ndarray, float]:
    """(alpha, a_old, theta_min) of the relative opening criterion, checked (ValueError)."""
    alpha = float(alpha)
    if not (np.isfinite(alpha) and alpha > 0):
        raise ValueError(f"alpha must be finite and > 0, got {alpha!r}")
    if not (0.0 < theta_max <= 1.15):
        raise ValueError(f"theta_max must be in (0, 1.15], got {theta_max!r}: beyond it a "
                         f"sink could lie inside an accepted cell's bounding sphere")
    if not (0.0 < theta_min <= theta_max):
        raise ValueError(f"theta_min must be in (0, theta_max = {theta_max}], got "
                         f"{theta_min!r}")
    a_old = np.ascontiguousarray(acc_old, np.float64)
    if a_old.shape != (n_sink, 3):
        raise ValueError(f"acc_old must have shape ({n_sink}, 3), got {a_old.shape}")
    if not np.isfinite(a_old).all():
        raise ValueError("acc_old must be finite")
    return alpha, a_old, float(theta_min)


def accelerations(pos, mass, eps: float = 0.0, method: str = "tree", theta: float = 0.5, *,
                  sinks=None, n_leaf: int = 16, n_group: int | None = None,
                  multipole: str = "monopole", device: str | None = None,
                  precise: bool = True, build: str = "device", opening: str = "geometric",
                  alpha: float = 0.005, theta_max: float = 1.0, theta_min: float = 0.25,
                  acc_old=None) -> Forces:
    """Accelerations and potentials for ``sinks`` (default: the sources themselves).

    pos: (N, 3) source positions; mass: (N,) or scalar; eps: Plummer softening.
    method: "tree" (group walk, opening angle ``theta``, ``multipole`` moments,
    leaves of at most ``n_leaf`` particles, groups of at most ``n_group`` sinks,
    default per device kind and N: :func:`hybridtree.gravity.walk.default_group`)
    or "direct" (exact O(N^2) Chamomile kernel; ``precise=False`` trades the
    hi + lo coordinates for speed, see :func:`hybridtree.gravity.direct.direct_forces`).  ``device``: see
    :mod:`hybridtree.device.choice`.  ``build``: where the tree is built (:data:`BUILDS`).

    ``opening`` (tree method): "geometric" (``theta``) or "relative", GADGET's criterion:
    a cell of mass M and size l is accepted when M l^2 / d^4 <= ``alpha`` |a_old| (l^3 /
    d^5 with quadrupoles) and its opening angle is below ``theta_max`` (GADGET-4's
    ErrTolThetaMax), with a_old the sink's acceleration from an earlier force (``acc_old``
    (n_sinks, 3), e.g. the last step's) or, without it, from a first geometric pass with
    ``theta`` (its time in ``timings["first_pass"]``).  A group walk takes the smallest
    |a_old| of its sinks; a cell smaller than ``theta_min`` is accepted whatever a_old
    (a sink at the centre of a system has |a_old| near 0 and would open every cell).  The relative criterion spends
    the interactions where the force is weak, so that the relative error is bounded more
    evenly (docs/physics.md: how alpha relates to the error).
    """
    if method not in METHODS:
        raise ValueError(f"method must be one of {METHODS}, got {method!r}")
    if opening not in OPENINGS:
        raise ValueError(f"opening must be one of {OPENINGS}, got {opening!r}")
    if opening == "relative" and method == "tree":
        n_sink = len(np.asarray(pos if sinks is None else sinks))
        first = None
        if acc_old is None:
            first = accelerations(pos, mass, eps, method, theta, sinks=sinks, n_leaf=n_leaf,
                                  n_group=n_group, multipole=multipole, device=device,
                                  precise=precise, build=build)
            acc_old = first.acc
        floor = _relative_floor(alpha, theta_max, theta_min, acc_old, n_sink)
        out = _forces(pos, mass, eps, method, theta_max, sinks, n_leaf, n_group, multipole,
                      device, precise, build, floor)
        if first is not None:
            out.timings["first_pass"] = first.timings.get("total", 0.0)
        return out
    return _forces(pos, mass, eps, method, theta, sinks, n_leaf, n_group, multipole, device,
                   precise, build, None)


def _forces(pos, mass, eps: float, method: str, theta: float, sinks, n_leaf: int,
            n_group: int | None, multipole: str, device: str | None, precise: bool,
            build: str, floor: tuple[float, np.ndarray, float] | None) -> Forces:
    """:func:`accelerations` once the opening criterion is settled (``floor``: the
    relative criterion's alpha and a_old, with ``theta`` its theta_max)."""
    _check_tree_knobs(n_leaf, n_group, multipole, theta if method == "tree" else None, build)
    eps = _check_eps(eps)
    self_sinks = sinks is None
    # the automatic device choice passes over devices too small for these particles
    rt = get_runtime(device, memory_needed(len(pos) + (0 if self_sinks else len(sinks)),
                                           state=False))
    resident = method == "tree" and build == "device" and self_sinks and rt.has_fp64
    if resident:
        pos, mass = shaped_particles(pos, mass)        # values: checked on the device
    else:
        pos, mass = validate_particles(pos, mass)
    if not self_sinks:
        sinks, _ = validate_particles(sinks, np.zeros(len(np.asarray(sinks))), "sinks")
    n_sink = len(pos) if self_sinks else len(sinks)
    if len(pos) == 0 or n_sink == 0:
        z = np.zeros(n_sink, np.int64)
        return Forces(np.zeros((n_sink, 3)), np.zeros(n_sink), z, z.copy())

    if resident:
        return _resident_forces(rt, pos, mass, eps, theta, n_leaf, n_group, multipole, floor)
    t0 = time.perf_counter()
    if method == "direct":
        sink_pos = pos if self_sinks else sinks
        acc, pot, t = direct_forces(rt, pos, mass, sink_pos, eps, self_skip=self_sinks,
                                    split=precise)
        n_pp = np.full(n_sink, len(pos) - int(self_sinks), np.int64)
        n_pc = np.zeros(n_sink, np.int64)
    else:
        tree = _build(rt, build, pos, mass, theta, n_leaf, multipole)
        t = {f"build_{k}": v for k, v in tree.timings.items()}
        t["build"] = time.perf_counter() - t0
        acc, pot, n_pp, n_pc, tw = tree_forces(rt, tree, eps, n_group=n_group,
                                               sinks=None if self_sinks else sinks, floor=floor)
        t.update(tw)
    t["total"] = time.perf_counter() - t0
    return Forces(acc, pot, n_pp, n_pc, device=rt.info.label, timings=t)


def split_accelerations(pos, mass, eps: float, changeover: Changeover,
                        parts: tuple[str, ...] = ("hard", "soft"), theta: float = 0.5, *,
                        n_leaf: int = 16, n_group: int | None = None,
                        multipole: str = "monopole", device: str | None = None,
                        build: str = "device") -> dict[str, Forces]:
    """The hybrid tree's force parts of every particle from one tree build.

    ``parts``: any of "soft" (every accepted interaction weighted by W(r); potential:
    the full one), "hard" (weighted by 1 − W(r), cells beyond r_out skipped unopened;
    no potential) and "full".  Soft + hard = full to float32 rounding
    (:mod:`hybridtree.gravity.splitting`).  The tree's build time is in the first part's
    timings.
    """
    _check_tree_knobs(n_leaf, n_group, multipole, theta, build)
    pos, mass = validate_particles(pos, mass)
    eps = _check_eps(eps)
    rt = get_runtime(device, memory_needed(len(pos), state=False))
    t0 = time.perf_counter()
    tree = _build(rt, build, pos, mass, theta, n_leaf, multipole)
    build = time.perf_counter() - t0
    out = {}
    for part in parts:
        t1 = time.perf_counter()
        acc, pot, n_pp, n_pc, tw = tree_forces(rt, tree, eps, n_group=n_group,
                                               split=changeover, part=part)
        tw["build"] = build if not out else 0.0
        tw["total"] = time.perf_counter() - t1 + tw["build"]
        out[part] = Forces(acc, pot, n_pp, n_pc, device=rt.info.label, timings=tw)
    return out


def direct_reference(pos, mass, eps: float = 0.0, sinks=None,
                     chunk: int | None = None) -> tuple[np.ndarray, np.ndarray]:
    """Exact float64 direct summation on the host (numpy): (acc (n, 3), pot (n,)).

    Same conventions as :func:`accelerations` (self-interaction excluded when
    ``sinks`` is None; pairs at zero softened distance contribute nothing).
    ``chunk`` sinks are done at once; the default keeps the temporaries near 100 MB.
    """
    pos, mass = validate_particles(pos, mass)
    eps2 = _check_eps(eps) ** 2
    self_sinks = sinks is None
    sinks = pos if self_sinks else np.asarray(sinks, dtype=np.float64)
    chunk = int(chunk or max(1, (1 << 22) // max(len(pos), 1)))
    acc = np.zeros((len(sinks), 3))
    pot = np.zeros(len(sinks))
    for i0 in range(0, len(sinks), chunk):
        d = pos[None, :, :] - sinks[i0:i0 + chunk, None, :]
        r2 = np.einsum("ijk,ijk->ij", d, d) + eps2
        with np.errstate(divide="ignore"):
            rinv = np.where(r2 > 0, 1.0 / np.sqrt(np.where(r2 > 0, r2, 1.0)), 0.0)
        if self_sinks:
            rows = np.arange(i0, min(i0 + chunk, len(sinks)))
            rinv[rows - i0, rows] = 0.0
        mr = mass[None, :] * rinv
        acc[i0:i0 + chunk] = np.einsum("ij,ijk->ik", mr * rinv * rinv, d)
        pot[i0:i0 + chunk] = -mr.sum(axis=1)
    return acc, pot
