"""When a run's steps fall: the time of every step, the length of each, and which steps
write a scheduled snapshot.  Internal time units (G = 1); steps are counted from the
start of the run (a continued run counts its earlier steps), so a restart finds the same
schedule; a continued cosmological run takes its schedule's steps after the time it
continues from (:class:`Cosmic`'s ``anchor``), whatever that schedule's settings.

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

from ..errors import HybridtreeError

__all__ = ["Uniform", "Cosmic", "ScheduleError"]


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
    uniform in t (``stepping = "time"``) or in ln a (``"log_a"``): the grid of the whole
    run.  A continued run (``anchor``) takes the grid's points after its state's time:

    - ``anchor`` = (step, t, a): the state at the run's step ``step`` is at time ``t``
      (internal units) and scale factor ``a`` (a restart snapshot's).  Where ``t`` is a
      point of the grid (the schedule the state was stepped on, unchanged) the run goes
      on along the grid as if never stopped (bit for bit); elsewhere (``z_end``,
      ``steps``, ``stepping`` or ``z_start`` changed) the first step goes from ``t`` to
      the grid's next point, and the rest follow the grid.  Step numbers go on from
      ``step``.  :class:`ScheduleError` where the grid cannot continue from ``t``: it
      ends before ``t`` (the run would go back in time) or starts after it.
    """

    cosmological = True

    def __init__(self, cosmo: Any, z_start: float, z_end: float, steps: int, stepping: str,
                 redshifts: list[float], comoving: bool = False,
                 anchor: tuple[int, float, float] | None = None):
        """``comoving``: the run integrates comoving coordinates (a periodic box), whose
        softening stays comoving."""
        self.cosmo, self.comoving = cosmo, bool(comoving)
        times, a = _grid(cosmo, z_start, z_end, int(steps), stepping)
        self.step0 = 0
        if anchor is not None:
            self.step0, times, a = anchor[0], *_continued(times, a, anchor, z_start, z_end)
        self.times, self.scale = times, a
        #: the run's last step (its end, z_end)
        self.steps = self.step0 + len(times) - 1
        z = 1.0 / a - 1.0
        self.snapshot_steps = {self.step0, self.steps} | {
            self.step0 + int(np.argmin(np.abs(z - zi)))
            for zi in redshifts if z_end <= zi <= z_start}

    def _check(self, step: int) -> None:
        if not self.step0 <= step <= self.steps:
            raise ValueError(f"step {step} is outside the run's steps {self.step0} .. "
                             f"{self.steps} (cosmology.steps from z_start to z_end)")

    def time(self, step: int) -> float:
        self._check(step)
        return float(self.times[step - self.step0])

    def dt(self, step: int) -> float:
        """Length of the step from ``step`` to ``step + 1``; 0 at the run's end (no step
        is left)."""
        if step == self.steps:
            return 0.0
        self._check(step + 1)
        return float(self.times[step + 1 - self.step0] - self.times[step - self.step0])

    def scheduled(self, step: int) -> bool:
        return step in self.snapshot_steps

    def a(self, step: int) -> float:
        self._check(step)
        return float(self.scale[step - self.step0])

    def softening(self, step: int, eps: float) -> float | None:
        """The physical softening of the forces at ``step``: gravity.eps = ``eps`` is
        comoving, so ε = a ε_comoving (a constant fraction of the interparticle spacing);
        None where the forces are comoving themselves (the softening is not rescaled)."""
        return None if self.comoving else self.a(step) * eps

    def steps_to(self, t: float, step: int) -> int:
        """Steps from ``step`` to the step at time ``t`` (which must be one)."""
        k = int(np.argmin(np.abs(self.times - t))) + self.step0
        if abs(self.times[k - self.step0] - t) > 1e-9 * abs(t) or k < step:
            raise ValueError(f"evolve({t}): no step of this cosmological run is at that time "
                             f"after step {step} (use evolve(z=...))")
        return k - step

    def step_of_redshift(self, z: float) -> int:
        """The step whose redshift is closest to ``z``."""
        return self.step0 + int(np.argmin(np.abs(1.0 / self.scale - 1.0 - z)))


class ScheduleError(HybridtreeError, ValueError):
    """A cosmological schedule that cannot continue from a restart's time."""


#: times closer than this (relative) are one point of a schedule: a restart's saved time
#: and the grid's agree to the last bit when the schedule is unchanged
SAME_TIME = 1e-9


def _grid(cosmo: Any, z_start: float, z_end: float, steps: int, stepping: str
          ) -> tuple[np.ndarray, np.ndarray]:
    """Times and scale factors of ``steps`` steps from ``z_start`` to ``z_end``."""
    a0, a1 = 1.0 / (1.0 + z_start), 1.0 / (1.0 + z_end)
    t0, t1 = float(cosmo.t_of_a(a0)), float(cosmo.t_of_a(a1))
    k = np.arange(steps + 1)
    if stepping == "log_a":
        a = a0 * np.exp(k * (math.log(a1 / a0) / steps))
        a[0], a[-1] = a0, a1
        times = np.asarray(cosmo.t_of_a(a), np.float64)
    elif stepping == "time":
        times = t0 + k * ((t1 - t0) / steps)
        a = np.asarray(cosmo.a_of_t(times), np.float64)
        a[0], a[-1] = a0, a1
    else:
        raise ValueError(f"unknown stepping {stepping!r} (time or log_a)")
    times[0], times[-1] = t0, t1
    return times, a


def _continued(times: np.ndarray, a: np.ndarray, anchor: tuple[int, float, float],
               z_start: float, z_end: float) -> tuple[np.ndarray, np.ndarray]:
    """The grid ``times``, ``a`` from the restart point ``anchor`` = (step, t, a) on: its
    point at ``t`` (the saved t and a put in, which the grid's equal when unchanged) or
    ``t`` put before the grid's later points."""
    _, t, a_s = anchor
    z_s = 1.0 / a_s - 1.0
    tol = SAME_TIME * abs(t)
    if t > times[-1] + tol:
        raise ScheduleError(f"the snapshot is at z = {z_s:.6g} (a = {a_s:.6g}), later than "
                            f"cosmology.z_end = {z_end:g}: a restart continues from its "
                            f"snapshot's time and does not go back; to go on, set "
                            f"cosmology.z_end below {z_s:.6g}")
    if t < times[0] - tol:
        raise ScheduleError(f"cosmology.z_start = {z_start:g} is after the restart's z = "
                            f"{z_s:.6g}: the steps are counted from z_start, which must be at "
                            f"or before the state a run continues from")
    i = int(np.searchsorted(times, t - tol))
    if abs(times[i] - t) <= tol:
        times, a = times[i:].copy(), a[i:].copy()
    else:
        times, a = np.concatenate([[t], times[i:]]), np.concatenate([[a_s], a[i:]])
    times[0], a[0] = t, a_s
    return times, a
