"""The force engine: a run state in, accelerations and potentials in its fields out.

One engine per run (or per runtime for :func:`hybridtree.gravity.accelerations`).  For a
:class:`hybridtree.state.DeviceState` it builds the tree on the device from the device
positions, walks it for each force part into the state's buffers, removes the net force
and sums the interaction counts on the device; nothing is allocated (a
:class:`hybridtree.transfer.Workspace` keeps the tree's buffers between calls), nothing
is validated (the state was checked when it was made) and the host reads back only a
few numbers.  For a :class:`hybridtree.state.HostState` it does the same from numpy
arrays (upload, build, walk, download).  Units: G = 1, the state's units.

Net force: a tree force violates Newton's third law by the size of its error, so an
isolated system picks up a spurious net force (measured ~7e-5 at N = 1e4, θ = 0.5,
monopole) and its centre of mass drifts.  ``remove_net_force`` subtracts the
mass-weighted mean acceleration of each part (summed in the fixed order of
:mod:`hybridtree.reduce`, so both backends subtract the same bits).
"""

from __future__ import annotations

from collections import defaultdict
from dataclasses import dataclass

import numpy as np

from . import reduce
from .clock import Clock
from .direct import direct_forces
from .opencl import Runtime
from .splitting import Changeover
from .state import DeviceState, HostState, State
from .transfer import Workspace
from .tree import build_tree
from .tree.device_build import DeviceArrays, build_device_tree
from .treewalk import tree_forces, walk_into

__all__ = ["ForceEngine", "GravitySettings"]


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
                   remove_net_force=g.remove_net_force, device=g.device, **split)

    @property
    def parts(self) -> tuple[str, ...]:
        """The state's force parts: ("full",), or ("hard", "soft") for the hybrid tree."""
        return ("full",) if self.changeover is None else ("hard", "soft")


class ForceEngine:
    """Forces of a state (see the module docstring).  ``counts``: interactions per part
    and the number of forces computed, cumulative."""

    def __init__(self, g: GravitySettings, rt: Runtime, clock: Clock | None = None):
        self.g, self.rt = g, rt
        self.clock = clock or Clock(rt)
        self.work = Workspace(rt)
        self.counts: dict[str, int] = defaultdict(int)

    def compute(self, state: State, parts: tuple[str, ...]) -> None:
        """Forces of ``parts`` at the state's positions, into ``state.acc[part]`` (net force
        removed) and ``state.pot`` (from the full or soft part).  One tree serves all parts."""
        if isinstance(state, DeviceState):
            self._on_device(state, parts)
        else:
            self._on_host(state, parts)
        for part in parts:
            self.counts[f"{part}_forces"] += 1

    def _count(self, part: str, interactions: int) -> None:
        self.counts["interactions"] += interactions
        self.counts[f"{part}_interactions"] += interactions

    def _on_device(self, s: DeviceState, parts: tuple[str, ...]) -> None:
        g, rt, clock = self.g, self.rt, self.clock
        red = reduce.reducer(rt)
        with clock.device("build"):
            tree = build_device_tree(rt, DeviceArrays(s.pos, s.mass, s.n), None, theta=g.theta,
                                     n_leaf=g.n_leaf, multipole=g.multipole, alloc=self.work)
        for part in parts:
            pot = self.work("pot_unused", 8 * s.n) if part == "hard" else s.pot
            with clock.device("walk", f"walk_{part}"):
                counts, _, _ = walk_into(rt, tree, g.eps, s.acc[part], pot, g.n_group or None,
                                         g.changeover, part)
            with clock.device("reduce"):
                self._count(part, sum(red.count_sum(s.n, counts)))
                if g.remove_net_force:
                    red.subtract(s.n, s.acc[part], red.net_acceleration(s.n, s.mass, s.acc[part]))

    def _on_host(self, s: HostState, parts: tuple[str, ...]) -> None:
        g, rt, clock = self.g, self.rt, self.clock
        if g.method == "direct":
            assert parts == ("full",), "the direct method has no force split"
            with clock.host("walk", "walk_full", wait=True):
                acc, pot, _ = direct_forces(rt, s.pos, s.mass, s.pos, g.eps, self_skip=True,
                                            split=g.precise)
            self._count("full", s.n * max(s.n - 1, 0))
            self._store(s, "full", acc, pot)
            return
        if s.n == 0:
            return
        with clock.host("build", wait=True):
            if g.build == "device":
                tree = build_device_tree(rt, s.pos, s.mass, theta=g.theta, n_leaf=g.n_leaf,
                                         multipole=g.multipole, alloc=self.work)
            else:
                tree = build_tree(s.pos, s.mass, theta=g.theta, n_leaf=g.n_leaf,
                                  multipole=g.multipole)
        upload = float(tree.timings.get("upload", 0.0))
        clock.add("build", -upload)
        clock.add("transfer", upload)
        for part in parts:
            with clock.host("walk", f"walk_{part}", wait=True):
                acc, pot, n_pp, n_pc, tw = tree_forces(rt, tree, g.eps, g.n_group or None,
                                                       split=g.changeover, part=part)
            for name in ("walk", f"walk_{part}"):
                clock.add(name, -tw["download"])
            clock.add("transfer", tw["download"])
            self._count(part, int(n_pp.sum()) + int(n_pc.sum()))
            self._store(s, part, acc, pot)

    def _store(self, s: HostState, part: str, acc: np.ndarray, pot: np.ndarray) -> None:
        with self.clock.host("reduce"):
            if self.g.remove_net_force:
                acc -= reduce.host_net_acceleration(s.mass, acc)
            s.acc[part][:] = acc
            if part != "hard":
                s.pot[:] = pot
