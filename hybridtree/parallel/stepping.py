"""Time stepping on many processes: the one-process scheme and state with parallel forces.

Each process holds its particles in a run state (:mod:`hybridtree.state`: on the device
where the device has double precision, as for one process) and steps them with the same
scheme as one process (:class:`hybridtree.integrate.schemes.NestedLeapfrog`);
:class:`.engine.ParallelEngine` computes the forces from the local tree and the other
processes' LETs.  Once per (soft) step the domains are cut anew from a sample of the
particles weighted by each process's work in the step (its interaction count, which
does not include time spent waiting for others), and the particles that changed domain
move (:mod:`.migrate` on the device; the whole state through the host for a host
state).  The sample is drawn from one random stream per process that advances from step
to step; two runs of the same input on the same number of processes cut the same
domains.  Units: G = 1, the caller's units.
"""

from __future__ import annotations

from collections import defaultdict
from typing import Any

import numpy as np

from ..device.clock import Clock
from ..state.quantities import lagrangian_radii_across
from ..gravity.engine import GravitySettings
from ..particles import Particles
from ..device.runtime import Runtime
from ..integrate.choose import Comoving, scheme_for
from ..integrate.schemes import BlockSettings
from ..state import DeviceState, HostState, make_state, narrow_ids, state_backend
from ..integrate.stepper import Stepper
from .comm import Comm
from .domain import decompose, exchange
from .engine import ParallelEngine
from .migrate import migrate, sample_positions

__all__ = ["ParallelEngine", "ParallelStepper", "STATE_DTYPE"]

#: Seed of the sampling streams (one per rank: [SAMPLE_SEED, rank]).
SAMPLE_SEED = 1234

#: A particle with everything the scheme carries between steps, as it travels between
#: processes.
STATE_DTYPE = np.dtype([("pos", "f8", 3), ("vel", "f8", 3), ("mass", "f8"), ("id", "u8"),
                        ("acc_full", "f8", 3), ("acc_hard", "f8", 3), ("acc_soft", "f8", 3),
                        ("pot", "f8"), ("type", "u1")])


def _rows(state: HostState) -> np.ndarray:
    rows = np.zeros(state.n, STATE_DTYPE)
    rows["pos"], rows["vel"], rows["mass"], rows["id"] = (state.pos, state.vel, state.mass,
                                                          state.ids)
    for part, acc in state.acc.items():
        rows[f"acc_{part}"] = acc
    rows["pot"] = state.pot
    rows["type"] = state.types
    return rows


def _take(state: HostState, rows: np.ndarray) -> None:
    """Make ``rows`` the state's particles (after an exchange)."""
    state.pos, state.vel = rows["pos"].copy(), rows["vel"].astype(state.vel.dtype)  # exact
    state.mass, state.ids = rows["mass"].copy(), rows["id"].copy()
    state.acc = {part: rows[f"acc_{part}"].copy() for part in state.parts}
    state.pot = rows["pot"].copy()
    state.types = rows["type"].copy()


class ParallelStepper(Stepper):
    """The run driver's view of many processes: this process's particles, redistributed
    once per soft step."""

    def __init__(self, g: GravitySettings, p: Particles, rt: Runtime, comm: Comm,
                 grid: tuple[int, int, int] | None = None, samples: int = 2000,
                 overlap: bool = False, external: float = 0.0,
                 block: BlockSettings | None = None, comoving: Comoving | None = None,
                 vel32: bool = False):
        self.comm, self.grid, self.samples = comm, grid, samples
        self.clock = Clock(rt)
        backend = state_backend(rt, g.method, g.build)
        # the IDs' width on the device is every process's (particles change process)
        narrow = all(self.comm.allgather(narrow_ids(p.ids)))
        self.state = make_state(p, g.parts, backend, rt, self.clock, narrow, vel32=vel32)
        self.engine = ParallelEngine(g, rt, comm, self.clock, overlap)
        self.scheme = scheme_for(g, self.engine, external, block, combine=comm.allreduce,
                                 comoving=comoving)
        self.totals: dict[str, float] = defaultdict(float)
        self.rng = np.random.default_rng([SAMPLE_SEED, comm.rank])
        self.domains = None
        self._redistribute(float(self.state.n))

    def _redistribute(self, cost: float) -> None:
        """Decompose by ``cost`` and move the particles to their owners."""
        s = self.state
        box = self.engine.g.periodic
        if box is not None:         # a periodic box: into [0, L) before the owners are found
            s.wrap(box.box)
        with self.clock.host("decompose"):
            if isinstance(s, DeviceState):
                self.domains = decompose(self.comm, s.n, cost, shape=self.grid,
                                         samples_per_process=self.samples, rng=self.rng,
                                         take=lambda idx: sample_positions(s, idx,
                                                                           self.engine.work))
            else:
                self.domains = decompose(self.comm, s.pos, cost, shape=self.grid,
                                         samples_per_process=self.samples, rng=self.rng)
        with self.clock.host("exchange", wait=True):
            if isinstance(s, DeviceState):
                self.totals["migrants"] += migrate(self.comm, s, self.domains,
                                                   self.engine.work)
            else:
                _take(s, exchange(self.comm, _rows(s), self.domains.owner(s.pos)))

    def _collect(self) -> float:
        """Add this step's figures to the totals; returns this process's work."""
        step, self.engine.step = self.engine.step, defaultdict(float)
        for k, v in step.items():
            if k not in ("force", "work"):
                self.totals[k] += v
        work = step.get("work", 0.0)
        works = self.comm.allgather_float(work)
        self.totals["imbalance"] += float(works.max() / works.mean()) if works.mean() > 0 \
            else 1.0
        return work

    def start(self, reuse: bool) -> None:
        super().start(reuse)
        self.engine.step.clear()

    def step(self, dt: float) -> None:
        super().step(dt)
        work = self._collect()
        self.totals["steps"] += 1
        self._redistribute(work if work > 0 else float(self.state.n))

    def moments(self, mass: Any = None) -> dict:
        m = self.state.moments(mass)
        local = np.concatenate([[m["mass"]], m["mass"] * m["com"], [m["kinetic"], m["potential"]],
                                m["momentum"], m["angular_momentum"], [m["inertia"]]])
        tot = self.comm.allreduce(local)
        com = tot[1:4] / tot[0] if tot[0] > 0 else np.zeros(3)
        return {"mass": float(tot[0]), "com": com, "kinetic": float(tot[4]),
                "potential": float(tot[5]), "momentum": tot[6:9], "angular_momentum": tot[9:12],
                "inertia": float(tot[12])}

    def lagrangian_radii(self, centre: np.ndarray, total_mass: float,
                         mass: Any = None) -> list[float]:
        s = self.state
        if isinstance(s, DeviceState):
            return s.lagrangian_radii(centre, total_mass=total_mass,
                                      combine=self.comm.allreduce, mass=mass)
        with self.clock.host("reduce"):
            # about the centre of mass of ``mass``, which ``centre`` is
            return lagrangian_radii_across(self.comm, s.pos, s.mass if mass is None else mass)

    def breakdown(self) -> dict[str, float]:
        return dict(self.totals)
