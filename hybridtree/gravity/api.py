"""One entry point for gravity: accelerations and potentials of sinks from sources.

Units: G = 1; positions, masses and the softening length eps in any consistent
units.  Forces use Plummer softening: a source of mass m at separation r gives
acceleration m r_vec / (r^2 + eps^2)^(3/2) and potential -m / (r^2 + eps^2)^(1/2).
A particle never acts on itself.  Results come back in float64, in the caller's
particle order; the device computes in float32.  Every call is a thin call of the run's
force engine (:class:`hybridtree.gravity.engine.ForceEngine`, net force kept); the knobs'
defaults and ranges are the schema's (:mod:`.knobs`), except ``eps``, 0 by default.
Particles beyond the range of the float32 kernels (their span against ``eps``, their
masses: :mod:`hybridtree.gravity.tree.limits`) raise
:class:`hybridtree.gravity.tree.limits.RangeError` (a user error and a ValueError) naming
the particle and the range, before any force; so does a force that is not finite (eps =
0 and a pair too close for float32).
"""

from __future__ import annotations

from typing import Any

import numpy as np

from ..device.choice import get_runtime, memory_needed
from ..device.clock import Clock
from ..device.transfer import Workspace
from ..config.quantities import accepts_quantities
from ..errors import UserInputError, real_argument
from ..particles import shaped_particles, validate_particles
from .engine import Forces, ForceEngine, GravitySettings
from .criterion import Relative
from .knobs import (BUILDS, METHODS, OPENINGS, check_eps, check_tree_knobs, default,
                    relative_criterion)
from .periodic import ASMTH, RCUT, Periodic, default_mesh
from .softening import check_softening, pair_factors
from .splitting import Changeover
from .tree.limits import check_range, check_result

__all__ = ["BUILDS", "Forces", "METHODS", "OPENINGS", "accelerations", "direct_reference",
           "split_accelerations", "validate_particles"]

def _engine(rt, **knobs) -> ForceEngine:
    """A force engine for one public call: the net force kept, a fresh clock (the call's
    timings), the runtime's kept buffers (``rt.public_work``: one set per runtime, made at
    its first public call and kept between calls, so that a loop of calls allocates
    nothing; they go with the runtime)."""
    work = getattr(rt, "public_work", None)
    if work is None:
        work = rt.public_work = Workspace(rt)
    g = GravitySettings(remove_net_force=False, **knobs)
    return ForceEngine(g, rt, Clock(rt), work)


@accepts_quantities({"acc": "acceleration", "pot": "potential"}, pos="length", mass="mass",
                    eps="length", sinks="length", box="length", acc_old="acceleration")
def accelerations(pos, mass, eps: float | np.ndarray = 0.0, method: str = default("method"),
                  theta: float = default("theta"), *, sinks=None,
                  n_leaf: int = default("n_leaf"), n_group: int | None = None,
                  multipole: str = default("multipole"), device: str | None = None,
                  precise: bool = default("precise"), build: str = default("build"),
                  opening: str = default("opening"), alpha: float = default("alpha"),
                  theta_max: float = default("theta_max"),
                  theta_min: float = default("theta_min"), acc_old=None,
                  box: float | None = None, pm_grid: int | None = None, asmth: float = ASMTH,
                  rcut: float = RCUT, softening: str = default("softening")) -> Forces:
    """Accelerations and potentials for ``sinks`` (default: the sources themselves),
    computed by the run's force engine (:class:`hybridtree.gravity.engine.ForceEngine`)
    with the net force kept.

    pos: (N, 3) source positions; mass: (N,) or scalar; eps: the softening length
    (default 0: exact Newtonian gravity unless asked; a run's own default, the schema's
    ``gravity.eps``, is a run setting); ``softening``: "plummer" (the default) or "spline",
    GADGET's cubic spline with ``eps`` its Plummer-equivalent length, exactly Newtonian
    beyond 2.8 eps (:mod:`hybridtree.gravity.softening`; eps > 0, monopole cells).  ``eps``
    may be one value per source (N,): a pair's softening is then the larger of the sink's
    and the source's, GADGET-4's rule (sinks given apart have none of their own); a tree
    cell's is the mass-weighted mean eps^2 of its particles, and a cell of mixed
    softenings is opened within 2.8 times its largest by sinks softened less than that
    (cl/walkcommon.cl ``PER_EPS``; the tree built on the device).  The other defaults are the schema's
    (``gravity.*``, docs/configuration.md); ``n_group=None``: the device's default.
    method: "tree" (group walk, opening angle ``theta``, ``multipole`` moments,
    leaves of at most ``n_leaf`` particles, groups of at most ``n_group`` sinks,
    default per device kind and N: :func:`hybridtree.gravity.walk.default_group`)
    or "direct" (exact O(N^2) Chamomile kernel; ``precise=False`` trades the
    hi + lo coordinates for speed, see :func:`hybridtree.gravity.direct.direct_forces`).  ``device``: see
    :mod:`hybridtree.device.choice`.  ``build``: where the tree is built (:data:`BUILDS`).

    ``multipole``: "monopole", "quadrupole" or "auto" (quadrupoles on CPU devices,
    monopoles on GPUs: :func:`hybridtree.gravity.knobs.auto_multipole`).
    ``opening`` (tree method): "auto" (the default: relative when ``acc_old`` is given,
    else geometric), "geometric" (``theta``) or "relative", GADGET's criterion:
    a cell of mass M and size l is accepted when M l^2 / d^4 <= ``alpha`` |a_old| (l^3 /
    d^5 with quadrupoles) and its opening angle is below ``theta_max`` (GADGET-4's
    ErrTolThetaMax), with a_old the sink's acceleration from an earlier force (``acc_old``
    (n_sinks, 3), e.g. the last step's) or, without it, from a first geometric pass with
    ``theta`` (its time in ``timings["first_pass"]``).  A group walk takes the smallest
    |a_old| of its sinks; a cell smaller than ``theta_min`` is accepted whatever a_old
    (a sink at the centre of a system has |a_old| near 0 and would open every cell).  The relative criterion spends
    the interactions where the force is weak, so that the relative error is bounded more
    evenly (docs/physics.md: how alpha relates to the error).

    ``box``: the side L of a periodic cube (positions are taken modulo L): forces by
    TreePM (:mod:`hybridtree.gravity.periodic`), the tree's short range cut at ``rcut``
    r_s (GADGET's RCUT) plus the long range on a mesh of ``pm_grid``^3 points (GADGET's
    PMGRID; default :func:`hybridtree.gravity.periodic.default_mesh`), split at
    r_s = ``asmth`` L / pm_grid (GADGET's ASMTH); monopole cells; the potential in
    Ewald's convention (zero mean, a particle's own images included).
    """
    _check_numbers("accelerations", eps=eps, theta=theta, alpha=alpha, theta_max=theta_max,
                   theta_min=theta_min, box=box, asmth=asmth, rcut=rcut)
    eps = particle_eps(eps, len(np.asarray(pos)))
    check_softening(softening, float(np.min(eps, initial=np.inf)) if np.ndim(eps) else eps,
                    multipole == "quadrupole")
    periodic = None
    if box is not None:
        box = float(box)
        grid = default_mesh(len(np.asarray(pos))) if pm_grid is None else pm_grid
        periodic = Periodic(box, grid, float(asmth), float(rcut))
    if method not in METHODS:
        raise UserInputError(f"method must be one of {METHODS}, got {method!r}")
    if opening not in OPENINGS:
        raise UserInputError(f"opening must be one of {OPENINGS}, got {opening!r}")
    if opening == "auto":
        opening = "geometric" if acc_old is None else "relative"
    _check_range(pos, mass, eps, method == "tree", sinks, box)
    if opening == "relative" and method == "tree":
        n_sink = len(np.asarray(pos if sinks is None else sinks))
        first = None
        if acc_old is None:
            first = accelerations(pos, mass, eps, method, theta, sinks=sinks, n_leaf=n_leaf,
                                  n_group=n_group, multipole=multipole, device=device,
                                  precise=precise, build=build, box=box, pm_grid=pm_grid,
                                  asmth=asmth, rcut=rcut, softening=softening)
            acc_old = first.acc
        criterion = relative_criterion(alpha, theta_max, theta_min, acc_old, n_sink)
        out = _forces(pos, mass, eps, method, theta_max, sinks, n_leaf, n_group, multipole,
                      device, precise, build, criterion, periodic, softening)
        if first is not None:
            out.timings["first_pass"] = first.timings.get("total", 0.0)
        return out
    return _forces(pos, mass, eps, method, theta, sinks, n_leaf, n_group, multipole, device,
                   precise, build, None, periodic, softening)


def _forces(pos, mass, eps: float, method: str, theta: float, sinks, n_leaf: int,
            n_group: int | None, multipole: str, device: str | None, precise: bool,
            build: str, criterion: Relative | None,
            periodic: Periodic | None = None, softening: str = "plummer") -> Forces:
    """:func:`accelerations` once the opening criterion is settled (``criterion``: the
    relative one, with ``theta`` its theta_max; None: geometric with ``theta``;
    ``periodic``: the box of TreePM)."""
    check_tree_knobs(n_leaf, n_group, multipole, theta if method == "tree" else None, build)
    eps = eps if isinstance(eps, np.ndarray) else check_eps(eps)
    # the automatic device choice passes over devices too small for these particles
    rt = get_runtime(device, memory_needed(len(pos) + (0 if sinks is None else len(sinks)),
                                           state=False))
    engine = _engine(rt, method=method, eps=eps, theta=theta, n_leaf=n_leaf,
                     n_group=n_group or 0, multipole=multipole, precise=precise, build=build,
                     periodic=periodic, softening=softening)
    out = engine.sink_forces(pos, mass, sinks, criterion)["full"]
    check_result(out.acc, out.pot, np.asarray(pos if sinks is None else sinks, np.float64),
                 "accelerations")
    return out


def _check_range(pos, mass, eps: float | np.ndarray, tree: bool, sinks=None,
                 box: float | None = None) -> None:
    """:func:`hybridtree.gravity.tree.limits.check_range` of a public call's arrays
    (values: finite or refused later, where they are checked), its smallest softening."""
    pos, mass = shaped_particles(pos, mass)
    if sinks is not None:
        sinks = shaped_particles(sinks, np.zeros(len(np.asarray(sinks))), "sinks")[0]
    check_range(pos, mass, float(np.min(eps)) if np.ndim(eps) else float(eps), tree=tree,
                sinks=sinks, box=box, what="accelerations")


def _check_numbers(call: str, **args: Any) -> None:
    """UserTypeError / UserInputError for an argument that is not a finite real number
    (None passes; so does an array ``eps``, checked by :func:`particle_eps`)."""
    for name, value in args.items():
        if value is not None and not (name == "eps" and np.ndim(value) > 0):
            real_argument(f"{call}({name})", value)


def particle_eps(eps: Any, n: int) -> float | np.ndarray:
    """``eps`` as one float, or as (n,) float64 softenings of the sources (an array of one
    value is that value); ValueError for a wrong shape or a value not finite and >= 0."""
    if np.ndim(eps) == 0:
        return check_eps(eps)
    e = np.asarray(eps, np.float64)
    if e.shape != (n,):
        raise UserInputError(f"eps must be one number or one per particle, shape ({n},); got "
                         f"shape {e.shape}")
    if not (np.isfinite(e).all() and (e >= 0).all()):
        bad = int(np.flatnonzero(~(np.isfinite(e) & (e >= 0)))[0])
        raise UserInputError(f"softening eps[{bad}] = {e[bad]!r} is not finite and >= 0")
    return float(e[0]) if n and (e == e[0]).all() else e


def split_accelerations(pos, mass, eps: float, changeover: Changeover,
                        parts: tuple[str, ...] = ("hard", "soft"),
                        theta: float = default("theta"), *, n_leaf: int = default("n_leaf"),
                        n_group: int | None = None, multipole: str = default("multipole"),
                        device: str | None = None,
                        build: str = default("build")) -> dict[str, Forces]:
    """The hybrid tree's force parts of every particle from one tree build (the force
    engine's, net force kept; defaults: the schema's).

    ``parts``: any of "soft" (every accepted interaction weighted by W(r); potential:
    the full one), "hard" (weighted by 1 − W(r), cells beyond r_out skipped unopened;
    no potential) and "full".  Soft + hard = full to float32 rounding
    (:mod:`hybridtree.gravity.splitting`).  The tree's build time is in the first part's
    timings.
    """
    _check_numbers("split_accelerations", eps=eps, theta=theta)
    check_tree_knobs(n_leaf, n_group, multipole, theta, build)
    eps = check_eps(eps)
    _check_range(pos, mass, eps, True)
    rt = get_runtime(device, memory_needed(len(np.asarray(pos)), state=False))
    engine = _engine(rt, eps=eps, theta=theta, n_leaf=n_leaf, n_group=n_group or 0,
                     multipole=multipole, build=build, changeover=changeover)
    out = engine.sink_forces(pos, mass, parts=tuple(parts))
    for part, f in out.items():
        check_result(f.acc, f.pot, np.asarray(pos, np.float64),
                     f"split_accelerations ({part})")
    return out


def direct_reference(pos, mass, eps: float | np.ndarray = 0.0, sinks=None,
                     chunk: int | None = None, softening: str = "plummer"
                     ) -> tuple[np.ndarray, np.ndarray]:
    """Exact float64 direct summation on the host (numpy): (acc (n, 3), pot (n,)).

    Same conventions as :func:`accelerations` (self-interaction excluded when
    ``sinks`` is None; pairs at zero softened distance contribute nothing; ``softening``
    "plummer" or "spline", :func:`hybridtree.gravity.softening.pair_factors`).
    ``chunk`` sinks are done at once; the default keeps each temporary near 1 MB (in
    cache: 2 x faster than one 100 MB temporary at 20 000 particles).
    ``eps`` one per source: a pair's softening is the larger of the sink's and the
    source's (GADGET-4's rule; sinks given apart have 0, so each source's applies).
    """
    _check_numbers("direct_reference", eps=eps)
    pos, mass = validate_particles(pos, mass)
    eps = particle_eps(eps, len(pos))
    self_sinks = sinks is None
    sinks = pos if self_sinks else np.asarray(sinks, dtype=np.float64)
    chunk = int(chunk or max(1, (1 << 17) // max(len(pos), 1)))
    acc = np.zeros((len(sinks), 3))
    pot = np.zeros(len(sinks))
    src = [np.ascontiguousarray(pos[:, k]) for k in range(3)]
    for i0 in range(0, len(sinks), chunk):
        s = sinks[i0:i0 + chunk]
        d = [src[k][None, :] - s[:, k, None] for k in range(3)]
        r2 = d[0] * d[0]
        r2 += d[1] * d[1]
        r2 += d[2] * d[2]
        pair = eps
        if isinstance(eps, np.ndarray):
            own = eps[i0:i0 + chunk] if self_sinks else np.zeros(len(s))
            pair = np.maximum(own[:, None], eps[None, :])
        g, f = pair_factors(r2, pair, softening)
        if self_sinks:
            rows = np.arange(len(s))
            g[rows, rows + i0] = f[rows, rows + i0] = 0.0
        f *= mass[None, :]
        for k in range(3):
            acc[i0:i0 + chunk, k] = np.einsum("ij,ij->i", f, d[k])
        pot[i0:i0 + chunk] = -(g @ mass)
    return acc, pot
