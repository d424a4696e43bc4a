"""Time stepping on many processes: the one-process integrators with parallel forces.

Once per (soft) step the particles are redistributed (:mod:`.domain`, cost-weighted by
each process's force time of the last step); the leapfrog and the hybrid tree's nested
steps (:mod:`hybridtree.integrate`) then run unchanged on the local particles, with forces
from :func:`.forces.parallel_accelerations`.  Units: G = 1, the caller's units.
"""

from __future__ import annotations

import time
from collections import defaultdict
from dataclasses import dataclass, field

import numpy as np

from ..integrate import HybridModel, hybrid_step, kdk_step
from ..io.snapshot import Particles
from .comm import Comm
from .domain import decompose, exchange
from .forces import parallel_accelerations

__all__ = ["STATE_DTYPE", "ParallelModel", "ParallelStepper", "parallel_steps", "global_energy"]

#: A particle with everything the integrators carry between steps.
STATE_DTYPE = np.dtype([("pos", "f8", 3), ("vel", "f8", 3), ("mass", "f8"), ("id", "u8"),
                        ("acc_hard", "f8", 3), ("acc_soft", "f8", 3), ("pot", "f8")])


@dataclass
class ParallelModel(HybridModel):
    """Gravity settings plus a communicator; ``changeover=None``: the normal tree code.

    ``breakdown`` sums seconds per phase (and LET volumes) since the last reset.
    """

    comm: Comm = field(default_factory=Comm)
    grid: tuple[int, int, int] | None = None       # None: the most cubic
    samples: int = 2000                             # decomposition samples per process
    overlap: bool = False                           # local walk while the LETs travel
    breakdown: dict = field(default_factory=lambda: defaultdict(float))
    steps_on_device: bool = False      # the forces need the other processes' LETs

    @classmethod
    def from_settings(cls, g, h=None, **extra) -> "ParallelModel":
        """From the ``[gravity]`` and (hybrid runs) ``[hybrid]`` settings; ``extra``:
        comm, grid, samples, overlap."""
        if h is not None and h.enabled:
            return super().from_settings(g, h, **extra)
        return super(HybridModel, cls).from_settings(g, **extra)     # the normal tree

    def _force(self, pos, mass, part: str):
        t0 = time.perf_counter()
        f = parallel_accelerations(self.comm, pos, mass, self.eps, self.theta, n_leaf=self.n_leaf,
                                   n_group=self.n_group or None, multipole=self.multipole,
                                   device=self.device or None, build=self.build,
                                   split=self.changeover, part=part, overlap=self.overlap)
        b = self.breakdown
        for k, v in f.timings.items():
            b[k] += v
        key = "hard" if part == "hard" else "soft"
        b[f"let_{key}_entries"] += f.let_sent["cells"] + f.let_sent["particles"]
        b[f"let_{key}_bytes"] += f.let_sent["bytes"]
        seconds = time.perf_counter() - t0
        b["force"] += seconds
        self._account(f, part, seconds, f.timings.get("build", 0.0))
        return self._net(f.acc, mass), f.pot

    def _net(self, acc: np.ndarray, mass: np.ndarray) -> np.ndarray:
        if not self.remove_net_force:
            return acc
        tot = self.comm.allreduce(np.concatenate([[mass.sum()], mass @ acc if len(mass)
                                                  else np.zeros(3)]))
        return acc - tot[1:] / tot[0] if tot[0] > 0 else acc

    def __call__(self, pos, mass):
        return self._force(pos, mass, "full")

    def parts(self, pos, mass, parts):
        return {p: self._force(pos, mass, p) for p in parts}


def global_energy(comm: Comm, p: np.ndarray) -> tuple[float, float]:
    """(kinetic, potential) energy of all processes' particles (full potential in p)."""
    k = 0.5 * float(np.sum(p["mass"] * np.einsum("ij,ij->i", p["vel"], p["vel"])))
    w = 0.5 * float(np.sum(p["mass"] * p["pot"]))
    tot = comm.allreduce(np.array([k, w]))
    return float(tot[0]), float(tot[1])


def redistribute(model: ParallelModel, p: np.ndarray, cost: float) -> np.ndarray:
    """Decompose by cost and move particles to their owners (timed in the breakdown)."""
    t0 = time.perf_counter()
    dom = decompose(model.comm, p["pos"], cost, shape=model.grid,
                    samples_per_process=model.samples)
    t1 = time.perf_counter()
    p = exchange(model.comm, p, dom.owner(p["pos"]))
    model.breakdown["decompose"] += t1 - t0
    model.breakdown["exchange"] += time.perf_counter() - t1
    return p


def _advance(model: ParallelModel, p: np.ndarray, dt: float) -> tuple[np.ndarray, dict]:
    """One (soft) step of the local particles, then the redistribution; returns the
    particles owned afterwards and the step's breakdown (seconds, LET volumes,
    ``imbalance`` = max / mean force time over the processes)."""
    model.breakdown.clear()
    t0 = time.perf_counter()
    pos, vel = p["pos"].copy(), p["vel"].copy()
    if model.changeover is not None:
        pos, vel, ah, asoft, pot = hybrid_step(pos, vel, p["acc_hard"].copy(),
                                               p["acc_soft"].copy(), p["mass"], dt, model)
        p["acc_hard"], p["acc_soft"] = ah, asoft
    else:
        pos, vel, acc, pot = kdk_step(pos, vel, p["acc_soft"].copy(), p["mass"], dt, model)
        p["acc_soft"] = acc
    p["pos"], p["vel"], p["pot"] = pos, vel, pot
    total = time.perf_counter() - t0
    force = model.breakdown["force"]
    times = model.comm.allgather_float(force)
    step = dict(model.breakdown)
    step["integrate"] = total - force
    model.timers.integrate += total - force
    step["imbalance"] = float(times.max() / times.mean()) if times.mean() > 0 else 1.0
    cost = force if force > 0 else float(len(p))
    p = redistribute(model, p, cost)        # once per soft step
    step["decompose"] = model.breakdown["decompose"]
    step["exchange"] = model.breakdown["exchange"]
    return p, step


def _start(model: ParallelModel, p: np.ndarray) -> None:
    """Forces at the current positions (both parts for a hybrid run)."""
    if model.changeover is not None:
        r = model.parts(p["pos"], p["mass"], ("hard", "soft"))
        p["acc_hard"], (p["acc_soft"], p["pot"]) = r["hard"][0], r["soft"]
    else:
        p["acc_soft"], p["pot"] = model(p["pos"], p["mass"])


def parallel_steps(model: ParallelModel, p: np.ndarray, dt: float, n_steps: int,
                   start: bool = True) -> tuple[np.ndarray, list[dict]]:
    """Advance the local particles ``p`` (STATE_DTYPE) by ``n_steps`` (soft) steps of ``dt``.

    ``start``: compute the forces at the initial positions first.  Returns the particles
    this process owns at the end and one breakdown per step (see :func:`_advance`).
    """
    p = redistribute(model, p, float(len(p)))
    if start:
        _start(model, p)
    steps = []
    for _ in range(n_steps):
        p, step = _advance(model, p, dt)
        steps.append(step)
    return p, steps


class ParallelStepper:
    """The run driver's view of many processes (interface of
    :class:`hybridtree.stepper.SerialStepper`): this process's particles, redistributed
    once per soft step."""

    def __init__(self, model: ParallelModel, p: Particles):
        state = np.zeros(len(p), STATE_DTYPE)
        state["pos"], state["vel"], state["mass"], state["id"] = p.pos, p.vel, p.mass, p.ids
        if p.acc is not None:
            state["acc_soft"] = p.acc
        if p.pot is not None:
            state["pot"] = p.pot
        self.model = model
        self.totals: dict[str, float] = defaultdict(float)
        model.breakdown.clear()
        self.p = redistribute(model, state, float(len(state)))
        self._add(dict(model.breakdown))

    def _add(self, step: dict) -> None:
        for k, v in step.items():
            self.totals[k] += v

    @property
    def particles(self) -> Particles:
        """This process's particles as views of the state (as the serial stepper's are
        the state itself); ``acc`` is the sum of the two parts."""
        p = self.p
        return Particles(p["pos"], p["vel"], p["mass"], p["id"], p["acc_hard"] + p["acc_soft"],
                         p["pot"])

    def start(self, reuse: bool) -> None:
        model = self.model
        if reuse and model.changeover is None:
            return
        model.breakdown.clear()
        _start(model, self.p)
        self._add(dict(model.breakdown))

    def step(self, dt: float) -> None:
        self.p, step = _advance(self.model, self.p, dt)
        self._add(step)
        self.totals["steps"] += 1

    def breakdown(self) -> dict[str, float]:
        return dict(self.totals)
