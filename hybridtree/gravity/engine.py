"""The force engine: a run state in, accelerations and potentials in its fields out.

One engine per run (or per runtime for :func:`hybridtree.gravity.accelerations`).  For a
:class:`hybridtree.integrate.state.DeviceState` it builds the tree on the device from the device
positions, walks it for each force part into the state's buffers, removes the net force
and sums the interaction counts on the device; nothing is allocated (a
:class:`hybridtree.device.transfer.Workspace` keeps the tree's buffers between calls), nothing
is validated (the state was checked when it was made) and the host reads back only a
few numbers.  For a :class:`hybridtree.integrate.state.HostState` it does the same from numpy
arrays (upload, build, walk, download).  Units: G = 1, the state's units.

Net force: a tree force violates Newton's third law by the size of its error, so an
isolated system picks up a spurious net force (measured ~7e-5 at N = 1e4, θ = 0.5,
monopole) and its centre of mass drifts.  ``remove_net_force`` subtracts the
mass-weighted mean acceleration of each part (summed in the fixed order of
:mod:`hybridtree.device.reduce`, so both backends subtract the same bits).
"""

from __future__ import annotations

from collections import defaultdict
from dataclasses import dataclass

import numpy as np

from ..device import reduce
from ..device.clock import Clock
from .direct import direct_forces
from ..device.runtime import Runtime
from .splitting import Changeover
from ..integrate.state import DeviceState, HostState, State
from ..device.transfer import Workspace
from .tree import build_tree
from .tree.device_build import DeviceArrays, build_device_tree
from .walk import tree_forces, walk_active, walk_into

__all__ = ["ForceEngine", "GravitySettings", "opening_floor"]


@dataclass(frozen=True)
class GravitySettings:
    """The gravity knobs of a run (see docs/configuration.md, ``[gravity]``/``[hybrid]``)."""

    method: str = "tree"
    eps: float = 0.01
    theta: float = 0.5
    n_leaf: int = 16
    n_group: int = 0                # 0: the device kind's default
    multipole: str = "monopole"
    precise: bool = True
    build: str = "device"
    remove_net_force: bool = True
    device: str = ""
    changeover: Changeover | None = None     # the hybrid tree's force split
    n_hard: int = 1                          # hard steps per soft step
    opening: str = "geometric"               # or "relative" (GADGET's; needs alpha)
    alpha: float = 0.005                     # the relative criterion's tolerance
    theta_max: float = 1.0                   # the relative criterion's largest angle
    theta_min: float = 0.25                  # ... and the angle it accepts whatever a_old

    @classmethod
    def from_settings(cls, g, h=None) -> "GravitySettings":
        """From the validated ``[gravity]`` and ``[hybrid]`` settings."""
        split = {}
        if h is not None and h.enabled:
            if g.method != "tree":
                raise ValueError("hybrid.enabled needs gravity.method = 'tree'")
            split = {"changeover": Changeover(h.r_in, h.r_out, h.changeover),
                     "n_hard": h.n_hard}
        return cls(method=g.method, eps=g.eps, theta=g.theta, n_leaf=g.n_leaf,
                   n_group=g.n_group, multipole=g.multipole, precise=g.precise, build=g.build,
                   remove_net_force=g.remove_net_force, device=g.device, opening=g.opening,
                   alpha=g.alpha, theta_max=g.theta_max, theta_min=g.theta_min, **split)

    @property
    def parts(self) -> tuple[str, ...]:
        """The state's force parts: ("full",), or ("hard", "soft") for the hybrid tree."""
        return ("full",) if self.changeover is None else ("hard", "soft")


def opening_floor(g: GravitySettings, known: bool, acc):
    """(alpha, a_old = ``acc``, theta_min) for the relative opening criterion, or None:
    the geometric test, asked for or by a first force (``known`` false: no a_old yet)."""
    if g.opening == "relative" and known:
        return g.alpha, acc, g.theta_min
    return None


class ForceEngine:
    """Forces of a state (see the module docstring).  ``counts``: interactions per part
    and the number of forces computed, cumulative."""

    def __init__(self, g: GravitySettings, rt: Runtime, clock: Clock | None = None):
        self.g, self.rt = g, rt
        self.clock = clock or Clock(rt)
        self.work = Workspace(rt)
        self.counts: dict[str, int] = defaultdict(int)
        self._known = False       # the state holds forces of its current particles

    def forces_known(self) -> None:
        """The state already holds forces (a restart): the relative opening criterion may
        use them from the first computation on."""
        self._known = True

    def compute(self, state: State, parts: tuple[str, ...], active=None) -> int:
        """Forces of ``parts`` at the state's positions, into ``state.acc[part]`` (net force
        removed) and ``state.pot`` (from the full or soft part).  One tree serves all parts.
        ``active`` = (time bins, kmin): forces only of the particles of bin >= kmin (the
        whole force, no net force removed; :mod:`hybridtree.integrate.timebins`); None: all.
        Returns the number of particles whose force was computed."""
        if active is not None and parts != ("full",):
            raise ValueError("forces of the active particles only: the whole force only")
        if isinstance(state, DeviceState):
            done = self._on_device(state, parts, active)
        else:
            done = self._on_host(state, parts, active)
        for part in parts:
            self.counts[f"{part}_forces"] += 1
        self._known = True
        return done

    def _count(self, part: str, interactions: int) -> None:
        self.counts["interactions"] += interactions
        self.counts[f"{part}_interactions"] += interactions

    def _on_device(self, s: DeviceState, parts: tuple[str, ...], active) -> int:
        g, rt, clock = self.g, self.rt, self.clock
        red = reduce.reducer(rt)
        floor = opening_floor(self.g, self._known, s.acc.get("full"))
        with clock.device("build"):
            tree = build_device_tree(rt, DeviceArrays(s.pos, s.mass, s.n), None,
                                     theta=g.theta_max if floor else g.theta,
                                     n_leaf=g.n_leaf, multipole=g.multipole, alloc=self.work)
        if active is not None:
            with clock.device("walk", "walk_full"):
                counts, m, _ = walk_active(rt, tree, g.eps, s.acc["full"], s.pot, *active,
                                           g.n_group or None, floor)
            with clock.device("reduce"):
                self._count("full", sum(red.count_sum(m, counts)))
            return m
        for part in parts:
            pot = self.work("pot_unused", 8 * s.n) if part == "hard" else s.pot
            with clock.device("walk", f"walk_{part}"):
                counts, _, _ = walk_into(rt, tree, g.eps, s.acc[part], pot, g.n_group or None,
                                         g.changeover, part, floor=floor)
            with clock.device("reduce"):
                self._count(part, sum(red.count_sum(s.n, counts)))
                if g.remove_net_force:
                    red.subtract(s.n, s.acc[part], red.net_acceleration(s.n, s.mass, s.acc[part]))
        return s.n

    def _on_host(self, s: HostState, parts: tuple[str, ...], active) -> int:
        g, rt, clock = self.g, self.rt, self.clock
        rows = None if active is None else np.flatnonzero(active[0] >= active[1])
        if rows is not None and len(rows) == 0:
            return 0
        if g.method == "direct":
            assert parts == ("full",), "the direct method has no force split"
            sinks = s.pos if rows is None else s.pos[rows]
            with clock.host("walk", "walk_full", wait=True):
                acc, pot, _ = direct_forces(rt, s.pos, s.mass, sinks, g.eps,
                                            self_skip=rows is None, split=g.precise)
            self._count("full", len(sinks) * max(s.n - 1, 0))
            self._store(s, "full", acc, pot, rows)
            return len(sinks)
        if s.n == 0:
            return 0
        floor = opening_floor(self.g, self._known, s.acc.get("full"))
        theta = g.theta_max if floor else g.theta
        with clock.host("build", wait=True):
            if g.build == "device":
                tree = build_device_tree(rt, s.pos, s.mass, theta=theta, n_leaf=g.n_leaf,
                                         multipole=g.multipole, alloc=self.work)
            else:
                tree = build_tree(s.pos, s.mass, theta=theta, n_leaf=g.n_leaf,
                                  multipole=g.multipole)
        upload = float(tree.timings.get("upload", 0.0))
        clock.add("build", -upload)
        clock.add("transfer", upload)
        sinks = None if rows is None else s.pos[rows]
        if floor is not None and rows is not None:
            floor = (floor[0], floor[1][rows], floor[2])
        for part in parts:
            with clock.host("walk", f"walk_{part}", wait=True):
                acc, pot, n_pp, n_pc, tw = tree_forces(rt, tree, g.eps, g.n_group or None,
                                                       sinks=sinks, split=g.changeover,
                                                       part=part, floor=floor)
            for name in ("walk", f"walk_{part}"):
                clock.add(name, -tw["download"])
            clock.add("transfer", tw["download"])
            # a sink that is not the tree's own meets itself in its leaf: one interaction
            self._count(part, int(n_pp.sum()) + int(n_pc.sum()) - (0 if rows is None
                                                                     else len(rows)))
            self._store(s, part, acc, pot, rows)
        return s.n if rows is None else len(rows)

    def _store(self, s: HostState, part: str, acc: np.ndarray, pot: np.ndarray,
               rows: np.ndarray | None = None) -> None:
        """Forces into the state: all rows (net force removed), or ``rows`` only (the
        active particles: no net force removed; their potential is not kept, because a
        walk for foreign sinks counts their own mass at zero separation)."""
        with self.clock.host("reduce"):
            if rows is not None:
                s.acc[part][rows] = acc
                return
            if self.g.remove_net_force:
                acc -= reduce.host_net_acceleration(s.mass, acc)
            s.acc[part][:] = acc
            if part != "hard":
                s.pot[:] = pot
