"""What the run driver advances: the particles of this process and their forces.

:class:`SerialStepper` is the one-process run (:mod:`hybridtree.integrate`);
:class:`hybridtree.parallel.stepping.ParallelStepper` has the same interface for runs
on many processes.  Units: internal (G = 1).
"""

from __future__ import annotations

from typing import Protocol

from .integrate import GravityModel, HybridModel, hybrid_step, kdk_step
from .io.snapshot import Particles

__all__ = ["Stepper", "SerialStepper"]


class Stepper(Protocol):
    """Particles of this process with the accelerations of their positions."""

    model: GravityModel

    @property
    def particles(self) -> Particles: ...

    def start(self, reuse: bool) -> None:
        """Forces at the start (``reuse``: keep a restart snapshot's accelerations)."""

    def step(self, dt: float) -> None:
        """One (soft) step of ``dt``."""

    def breakdown(self) -> dict[str, float]:
        """Cumulative seconds and LET volumes per phase (empty for one process)."""


class SerialStepper:
    """One process: leapfrog or hybrid steps of all particles."""

    def __init__(self, model: GravityModel, p: Particles):
        self.model, self._p = model, p
        self.hybrid = isinstance(model, HybridModel) and model.changeover is not None
        self.acc_hard = self.acc_soft = None

    @property
    def particles(self) -> Particles:
        return self._p

    def start(self, reuse: bool) -> None:
        p = self._p
        if self.hybrid:
            # a hybrid run recomputes its two parts, deterministic for the same positions
            r = self.model.parts(p.pos, p.mass, ("hard", "soft"))
            self.acc_hard, (self.acc_soft, p.pot) = r["hard"][0], r["soft"]
            p.acc = self.acc_hard + self.acc_soft
        elif not reuse:
            p.acc, p.pot = self.model(p.pos, p.mass)

    def step(self, dt: float) -> None:
        p, timers = self._p, self.model.timers
        if self.hybrid:
            p.pos, p.vel, self.acc_hard, self.acc_soft, p.pot = hybrid_step(
                p.pos, p.vel, self.acc_hard, self.acc_soft, p.mass, dt, self.model, timers)
            p.acc = self.acc_hard + self.acc_soft
        else:
            p.pos, p.vel, p.acc, p.pot = kdk_step(p.pos, p.vel, p.acc, p.mass, dt,
                                                  self.model, timers)

    def breakdown(self) -> dict[str, float]:
        return {}
