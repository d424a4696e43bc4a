"""Time stepping on many processes: the one-process scheme and state with parallel forces.

Each process holds its particles in a :class:`hybridtree.state.HostState` (the LET and
the particle exchange still run on the host; moving them to the device is the next
step) and steps them with the same scheme as one process
(:class:`hybridtree.schemes.NestedLeapfrog`); :class:`ParallelEngine` computes the
forces from the local tree and the other processes' LETs.  Once per (soft) step the
particles are redistributed (:mod:`.domain`, cost-weighted by each process's force time
of the last step).  Units: G = 1, the caller's units.
"""

from __future__ import annotations

import time
from collections import defaultdict

import numpy as np

from .. import reduce
from ..clock import Clock
from ..diagnostics import lagrangian_radii_across
from ..engine import GravitySettings
from ..io.snapshot import Particles
from ..opencl import Runtime
from ..schemes import scheme_for
from ..state import HostState
from ..stepper import Stepper
from .comm import Comm
from .domain import decompose, exchange
from .forces import parallel_accelerations

__all__ = ["ParallelEngine", "ParallelStepper", "STATE_DTYPE"]

#: A particle with everything the scheme carries between steps, as it travels between
#: processes.
STATE_DTYPE = np.dtype([("pos", "f8", 3), ("vel", "f8", 3), ("mass", "f8"), ("id", "u8"),
                        ("acc_full", "f8", 3), ("acc_hard", "f8", 3), ("acc_soft", "f8", 3),
                        ("pot", "f8")])


class ParallelEngine:
    """The force engine of many processes (``compute(state, parts)`` as
    :class:`hybridtree.engine.ForceEngine`): local tree plus LETs, net force removed
    over all processes.  ``step`` collects the current step's force seconds and LET
    volumes."""

    def __init__(self, g: GravitySettings, rt: Runtime, comm: Comm, clock: Clock,
                 overlap: bool = False):
        self.g, self.rt, self.comm, self.clock, self.overlap = g, rt, comm, clock, overlap
        self.counts: dict[str, int] = defaultdict(int)
        self.step: dict[str, float] = defaultdict(float)

    def compute(self, state: HostState, parts: tuple[str, ...]) -> None:
        g = self.g
        for part in parts:
            t0 = time.perf_counter()
            f = parallel_accelerations(self.comm, state.pos, state.mass, g.eps, g.theta,
                                       n_leaf=g.n_leaf, n_group=g.n_group or None,
                                       multipole=g.multipole, device=g.device or None,
                                       build=g.build, split=g.changeover, part=part,
                                       overlap=self.overlap)
            for k in ("let_select", "let_comm", "build", "walk"):
                self.clock.add(k, f.timings.get(k, 0.0))
            self.clock.add(f"walk_{part}", f.timings.get("walk", 0.0))
            key = "hard" if part == "hard" else "soft"
            self.step[f"let_{key}_entries"] += f.let_sent["cells"] + f.let_sent["particles"]
            self.step[f"let_{key}_bytes"] += f.let_sent["bytes"]
            self.step["force"] += time.perf_counter() - t0
            self.counts["interactions"] += f.interactions
            self.counts[f"{part}_interactions"] += f.interactions
            self.counts[f"{part}_forces"] += 1
            with self.clock.host("reduce"):
                acc = f.acc
                if g.remove_net_force:
                    local = reduce.host_block_sum(np.column_stack(
                        [state.mass[:, None] * acc, state.mass]))
                    tot = self.comm.allreduce(local)
                    if tot[3] > 0:
                        acc -= tot[:3] / tot[3]
                state.acc[part][:] = acc
                if part != "hard":
                    state.pot[:] = f.pot


def _rows(state: HostState) -> np.ndarray:
    rows = np.zeros(state.n, STATE_DTYPE)
    rows["pos"], rows["vel"], rows["mass"], rows["id"] = (state.pos, state.vel, state.mass,
                                                          state.ids)
    for part, acc in state.acc.items():
        rows[f"acc_{part}"] = acc
    rows["pot"] = state.pot
    return rows


def _take(state: HostState, rows: np.ndarray) -> None:
    """Make ``rows`` the state's particles (after an exchange)."""
    state.pos, state.vel = rows["pos"].copy(), rows["vel"].copy()
    state.mass, state.ids = rows["mass"].copy(), rows["id"].copy()
    state.acc = {part: rows[f"acc_{part}"].copy() for part in state.parts}
    state.pot = rows["pot"].copy()


class ParallelStepper(Stepper):
    """The run driver's view of many processes: this process's particles, redistributed
    once per soft step."""

    def __init__(self, g: GravitySettings, p: Particles, rt: Runtime, comm: Comm,
                 grid: tuple[int, int, int] | None = None, samples: int = 2000,
                 overlap: bool = False):
        self.comm, self.grid, self.samples = comm, grid, samples
        self.clock = Clock()
        self.state = HostState(p, g.parts, self.clock)
        self.engine = ParallelEngine(g, rt, comm, self.clock, overlap)
        self.scheme = scheme_for(g, self.engine)
        self.totals: dict[str, float] = defaultdict(float)
        self._redistribute(float(self.state.n))

    def _redistribute(self, cost: float) -> None:
        """Decompose by cost and move the particles to their owners."""
        with self.clock.host("decompose"):
            dom = decompose(self.comm, self.state.pos, cost, shape=self.grid,
                            samples_per_process=self.samples)
        with self.clock.host("exchange"):
            _take(self.state, exchange(self.comm, _rows(self.state), dom.owner(self.state.pos)))

    def _collect(self) -> None:
        step, self.engine.step = self.engine.step, defaultdict(float)
        for k, v in step.items():
            if k != "force":
                self.totals[k] += v
        times = self.comm.allgather_float(step.get("force", 0.0))
        self.totals["imbalance"] += float(times.max() / times.mean()) if times.mean() > 0 else 1.0

    def start(self, reuse: bool) -> None:
        super().start(reuse)
        self.engine.step.clear()

    def step(self, dt: float) -> None:
        super().step(dt)
        force = self.engine.step.get("force", 0.0)
        self._collect()
        self.totals["steps"] += 1
        self._redistribute(force if force > 0 else float(self.state.n))

    def moments(self) -> dict:
        m = self.state.moments()
        local = np.concatenate([[m["mass"]], m["mass"] * m["com"], [m["kinetic"], m["potential"]],
                                m["momentum"], m["angular_momentum"]])
        tot = self.comm.allreduce(local)
        com = tot[1:4] / tot[0] if tot[0] > 0 else np.zeros(3)
        return {"mass": float(tot[0]), "com": com, "kinetic": float(tot[4]),
                "potential": float(tot[5]), "momentum": tot[6:9], "angular_momentum": tot[9:12]}

    def lagrangian_radii(self, centre: np.ndarray, total_mass: float) -> list[float]:
        with self.clock.host("reduce"):
            return lagrangian_radii_across(self.comm, self.state.pos, self.state.mass)

    def breakdown(self) -> dict[str, float]:
        return dict(self.totals)
