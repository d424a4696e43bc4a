"""When a run's steps fall: the time of every step, the length of each, and which steps
write a scheduled snapshot.  Internal time units (G = 1); steps are counted from the
start of the run (a continued run counts its earlier steps), so a restart finds the same
schedule.

- :class:`Uniform`: steps of one length ``time.dt``, a snapshot every
  ``output.snapshot_dt``;
- :class:`Cosmic`: a cosmological run from ``cosmology.z_start`` to ``z_end`` in
  ``cosmology.steps`` steps, uniform in t or in ln a, snapshots at the steps closest to
  ``output.redshifts`` (and at the first and last step).
"""

from __future__ import annotations

import math
from typing import Any

import numpy as np

__all__ = ["Uniform", "Cosmic"]


class Uniform:
    """Steps of length ``dt`` from time ``t0`` at step ``step0``; a scheduled snapshot
    every ``every`` steps (step 0 included)."""

    cosmological = False

    def __init__(self, t0: float, step0: int, dt: float, every: int):
        self.t0, self.step0, self.dt_const, self.every = t0, step0, dt, max(1, every)

    def time(self, step: int) -> float:
        # from the start point, not accumulated: no drift, and a restart agrees exactly
        return self.t0 + (step - self.step0) * self.dt_const

    def dt(self, step: int) -> float:
        """Length of the step from ``step`` to ``step + 1``."""
        return self.dt_const

    def scheduled(self, step: int) -> bool:
        return step % self.every == 0

    def steps_to(self, t: float, step: int) -> int:
        """Steps from ``step`` to time ``t``; ValueError unless a whole number >= 0."""
        now = self.time(step)
        n = round((t - now) / self.dt_const)
        if n < 0 or abs(now + n * self.dt_const - t) > 1e-9 * max(abs(t), self.dt_const):
            near = now + max(n, 0) * self.dt_const
            raise ValueError(f"evolve({t}): not a whole number of steps dt = {self.dt_const} "
                             f"after t = {now} (nearest: {near})")
        return n

    def a(self, step: int) -> float:
        return float("nan")

    def softening(self, step: int, eps: float) -> float | None:
        """The physical softening of the forces at ``step`` for gravity.eps = ``eps``:
        None, the run's softening is not rescaled."""
        return None


class Cosmic:
    """``steps`` steps from redshift ``z_start`` to ``z_end`` of the background
    ``cosmo`` (:class:`hybridtree.cosmo.background.Cosmology`: ``t_of_a``, ``a_of_t``),
    uniform in t (``stepping = "time"``) or in ln a (``"log_a"``)."""

    cosmological = True

    def __init__(self, cosmo: Any, z_start: float, z_end: float, steps: int, stepping: str,
                 redshifts: list[float], comoving: bool = False):
        """``comoving``: the run integrates comoving coordinates (a periodic box), whose
        softening stays comoving."""
        self.cosmo, self.steps, self.comoving = cosmo, int(steps), bool(comoving)
        a0, a1 = 1.0 / (1.0 + z_start), 1.0 / (1.0 + z_end)
        t0, t1 = float(cosmo.t_of_a(a0)), float(cosmo.t_of_a(a1))
        k = np.arange(self.steps + 1)
        if stepping == "log_a":
            a = a0 * np.exp(k * (math.log(a1 / a0) / self.steps))
            a[0], a[-1] = a0, a1
            times = np.asarray(cosmo.t_of_a(a), np.float64)
        elif stepping == "time":
            times = t0 + k * ((t1 - t0) / self.steps)
            a = np.asarray(cosmo.a_of_t(times), np.float64)
            a[0], a[-1] = a0, a1
        else:
            raise ValueError(f"unknown stepping {stepping!r} (time or log_a)")
        times[0], times[-1] = t0, t1
        self.times, self.scale = times, a
        z = 1.0 / a - 1.0
        self.snapshot_steps = {0, self.steps} | {int(np.argmin(np.abs(z - zi)))
                                                 for zi in redshifts
                                                 if z_end <= zi <= z_start}

    def _check(self, step: int) -> None:
        if not 0 <= step <= self.steps:
            raise ValueError(f"step {step} is outside the run's {self.steps} steps "
                             f"(cosmology.steps from z_start to z_end)")

    def time(self, step: int) -> float:
        self._check(step)
        return float(self.times[step])

    def dt(self, step: int) -> float:
        self._check(step + 1)
        return float(self.times[step + 1] - self.times[step])

    def scheduled(self, step: int) -> bool:
        return step in self.snapshot_steps

    def a(self, step: int) -> float:
        self._check(step)
        return float(self.scale[step])

    def softening(self, step: int, eps: float) -> float | None:
        """The physical softening of the forces at ``step``: gravity.eps = ``eps`` is
        comoving, so ε = a ε_comoving (a constant fraction of the interparticle spacing);
        None where the forces are comoving themselves (the softening is not rescaled)."""
        return None if self.comoving else self.a(step) * eps

    def steps_to(self, t: float, step: int) -> int:
        """Steps from ``step`` to the step at time ``t`` (which must be one)."""
        k = int(np.argmin(np.abs(self.times - t)))
        if abs(self.times[k] - t) > 1e-9 * abs(t) or k < step:
            raise ValueError(f"evolve({t}): no step of this cosmological run is at that time "
                             f"after step {step} (use evolve(z=...))")
        return k - step

    def step_of_redshift(self, z: float) -> int:
        """The step whose redshift is closest to ``z``."""
        return int(np.argmin(np.abs(1.0 / self.scale - 1.0 - z)))
