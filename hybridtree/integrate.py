"""Time integration: kick-drift-kick leapfrog, plain or nested (hybrid tree).

Positions and velocities stay float64 on the host; only the forces come from the
device (float32).  The leapfrog is symplectic and time-reversible: one step

    v += a(x) dt/2;   x += v dt;   v += a(x) dt/2

with the acceleration of the end of a step reused for the start of the next one.

The hybrid tree nests it (:func:`hybrid_step`): the soft force kicks every
Δt_soft = n_hard Δt_hard, the hard force (pairs within r_out) every Δt_hard.
"""

from __future__ import annotations

import time
from dataclasses import dataclass, field

import numpy as np

from .gravity import Forces, accelerations, split_accelerations
from .opencl import get_runtime
from .splitting import Changeover

__all__ = ["GravityModel", "HybridModel", "Timers", "hybrid_step", "kdk_step"]


@dataclass
class Timers:
    """Wall-clock seconds spent per part of the run."""

    build: float = 0.0          # tree construction (host)
    force: float = 0.0          # force computation on the device, transfers included
    integrate: float = 0.0      # kicks and drifts
    io: float = 0.0             # snapshots, diagnostics files
    interactions: int = 0       # particle-particle + particle-cell interactions
    # per force part (a plain run's forces count as soft); build time goes with the hard
    # force in a hybrid run, since the hard step rebuilds the tree
    soft_forces: int = 0
    soft_s: float = 0.0
    soft_interactions: int = 0
    hard_forces: int = 0
    hard_s: float = 0.0
    hard_interactions: int = 0

    def as_dict(self) -> dict[str, float]:
        return dict(self.__dict__)


@dataclass
class GravityModel:
    """The gravity settings of a run, as a function of positions (G = 1).

    ``remove_net_force``: a tree force violates Newton's third law by the size of its
    error, so an isolated system picks up a spurious net force (measured ~7e-5 at
    N = 1e4, θ = 0.5, monopole) and its centre of mass drifts.  Subtracting the
    mass-weighted mean acceleration restores exact momentum conservation and changes
    every force by that same small vector.
    """

    method: str = "tree"
    eps: float = 0.01
    theta: float = 0.5
    n_leaf: int = 16
    n_group: int = 0
    multipole: str = "monopole"
    precise: bool = True
    build: str = "device"
    remove_net_force: bool = True
    device: str = ""
    timers: Timers = field(default_factory=Timers)
    last: Forces | None = None

    @classmethod
    def from_settings(cls, g, **extra) -> "GravityModel":
        """From the ``[gravity]`` settings; ``extra``: a subclass's own fields."""
        return cls(method=g.method, eps=g.eps, theta=g.theta, n_leaf=g.n_leaf,
                   n_group=g.n_group, multipole=g.multipole, precise=g.precise,
                   build=g.build, remove_net_force=g.remove_net_force, device=g.device, **extra)

    def __call__(self, pos: np.ndarray, mass: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        """(acceleration (N, 3), potential (N,)) at ``pos``."""
        t0 = time.perf_counter()
        f = accelerations(pos, mass, self.eps, method=self.method, theta=self.theta,
                          n_leaf=self.n_leaf, n_group=self.n_group or None,
                          multipole=self.multipole, device=self.device or None,
                          precise=self.precise, build=self.build)
        build = float(f.timings.get("build", 0.0))
        self._account(f, "soft", time.perf_counter() - t0, build)
        return self._net(f.acc, mass), f.pot

    def _net(self, acc: np.ndarray, mass: np.ndarray) -> np.ndarray:
        if self.remove_net_force and mass.sum() > 0:
            acc -= (mass @ acc) / mass.sum()      # in place: acc is this call's own array
        return acc

    def _account(self, f: Forces, part: str, seconds: float, build: float) -> None:
        t = self.timers
        t.build += build
        t.force += seconds - build
        t.interactions += f.interactions
        part = "soft" if part == "full" else part      # a full force stands for the soft one
        setattr(t, f"{part}_forces", getattr(t, f"{part}_forces") + 1)
        setattr(t, f"{part}_s", getattr(t, f"{part}_s") + seconds)
        setattr(t, f"{part}_interactions", getattr(t, f"{part}_interactions") + f.interactions)
        self.last = f


@dataclass
class HybridModel(GravityModel):
    """Hard and soft force parts (tree method only; :mod:`hybridtree.splitting`)."""

    changeover: Changeover | None = None
    n_hard: int = 4
    #: do the hard steps with the particles kept on the device where the device can
    #: (hybridtree.resident: same arithmetic, far fewer transfers); False: on the host
    steps_on_device: bool = True

    @classmethod
    def from_settings(cls, g, h, **extra) -> "HybridModel":
        """From the ``[gravity]`` and ``[hybrid]`` settings; ``extra``: a subclass's own
        fields."""
        if g.method != "tree":
            raise ValueError("hybrid.enabled needs gravity.method = 'tree'")
        return super().from_settings(g, changeover=Changeover(h.r_in, h.r_out, h.changeover),
                                     n_hard=h.n_hard, **extra)

    def parts(self, pos: np.ndarray, mass: np.ndarray, parts: tuple[str, ...]
              ) -> dict[str, tuple[np.ndarray, np.ndarray]]:
        """{part: (acc, pot)} from one tree build at ``pos``."""
        res = split_accelerations(pos, mass, self.eps, self.changeover, parts, self.theta,
                                  n_leaf=self.n_leaf, n_group=self.n_group or None,
                                  multipole=self.multipole, device=self.device or None,
                                  build=self.build)
        out = {}
        for part in parts:
            f = res[part]
            self._account(f, part, f.timings["total"], f.timings["build"])
            if part == "hard" and self.remove_net_force and self._hard_on_device():
                # the net hard force summed as the device steps sum it (bit-for-bit runs)
                from .resident import hard_net_acceleration
                rt = get_runtime(self.device or None)
                out[part] = (f.acc - hard_net_acceleration(rt, f.acc, mass), f.pot)
            else:
                out[part] = (self._net(f.acc, mass), f.pot)
        return out

    def _hard_on_device(self) -> bool:
        if not self.steps_on_device:
            return False
        from .resident import can_keep_on_device      # that module imports this one
        return can_keep_on_device(self)

    def __call__(self, pos: np.ndarray, mass: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        """Full acceleration (hard + soft) and potential, e.g. for the first step."""
        r = self.parts(pos, mass, ("hard", "soft"))
        return r["hard"][0] + r["soft"][0], r["soft"][1]


def kdk_step(pos: np.ndarray, vel: np.ndarray, acc: np.ndarray, mass: np.ndarray,
             dt: float, forces, timers: Timers | None = None
             ) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
    """One kick-drift-kick step of length ``dt`` (in place on ``pos`` and ``vel``).

    ``acc`` is the acceleration at ``pos``; ``forces(pos, mass)`` returns
    (acc, pot).  Returns (pos, vel, acc, pot) at the end of the step.
    """
    t0 = time.perf_counter()
    half = 0.5 * dt
    vel += half * acc
    pos += dt * vel
    t1 = time.perf_counter()
    acc, pot = forces(pos, mass)
    t2 = time.perf_counter()
    vel += half * acc
    if timers is not None:
        timers.integrate += (t1 - t0) + (time.perf_counter() - t2)
    return pos, vel, acc, pot


def hybrid_step(pos: np.ndarray, vel: np.ndarray, acc_hard: np.ndarray, acc_soft: np.ndarray,
                mass: np.ndarray, dt: float, model: HybridModel, timers: Timers | None = None):
    """One soft step of length ``dt`` = n_hard hard steps (in place on pos, vel):

    soft half kick; n_hard × (hard half kick, drift dt/n_hard, rebuild the tree, hard
    force, hard half kick); soft force (same tree as the last hard force); soft half kick.
    Returns (pos, vel, acc_hard, acc_soft, pot) at the end of the step.
    With ``model.steps_on_device`` the step runs in :mod:`hybridtree.resident` where the
    device allows it (an exact model of this function).
    """
    if model._hard_on_device():
        from .resident import hybrid_step_on_device      # that module imports this one
        return hybrid_step_on_device(pos, vel, acc_hard, acc_soft, mass, dt, model, timers)
    t_int = 0.0
    t0 = time.perf_counter()
    n = model.n_hard
    h = dt / n
    vel += (0.5 * dt) * acc_soft
    pot = None
    for k in range(n):
        vel += (0.5 * h) * acc_hard
        pos += h * vel
        t_int += time.perf_counter() - t0
        if k < n - 1:
            acc_hard = model.parts(pos, mass, ("hard",))["hard"][0]
        else:
            r = model.parts(pos, mass, ("hard", "soft"))
            acc_hard, (acc_soft, pot) = r["hard"][0], r["soft"]
        t0 = time.perf_counter()
        vel += (0.5 * h) * acc_hard
    vel += (0.5 * dt) * acc_soft
    if timers is not None:
        timers.integrate += t_int + time.perf_counter() - t0
    return pos, vel, acc_hard, acc_soft, pot
