"""The tree walk's cell opening criterion as one value, from the settings to the kernels.

:class:`Geometric` accepts a cell of side l at distance d when l / d < theta; the tree
is built with theta.  :class:`Relative` is GADGET's: a cell of mass M is accepted when
M l^2 / d^4 <= alpha |a_old| (l^3 / d^5 with quadrupoles) and its angle is below
theta_max (the tree is built with theta_max), a cell under theta_min accepted whatever
a_old (cl/walkcommon.cl; docs/physics.md).  A criterion owns what reaches the device:
the angle it hands to the tree build (:attr:`build_theta`), the angle a LET is cut with
(:attr:`let_theta`), its kernel defines (:meth:`defines`) and its per-group data (alpha
times the smallest |a_old| of a group's sinks: :meth:`group_bounds` on the host,
:attr:`floor_args` for cl/blocks.cl ``group_floor``).  Made from the run's settings by
:func:`opening_criterion`.  Angles: radians-free ratios; a_old: the caller's units.
"""

from __future__ import annotations

from dataclasses import dataclass, field, replace
from typing import Any

import numpy as np

__all__ = ["Criterion", "Geometric", "Relative", "criterion_of", "opening_criterion"]


@dataclass(frozen=True, eq=False)
class Geometric:
    """The geometric criterion with opening angle ``theta`` (None: a walk's default,
    whose tree was built elsewhere)."""

    theta: float | None = None
    relative = False

    @property
    def build_theta(self) -> float | None:
        return self.theta

    @property
    def let_theta(self) -> float | None:
        return self.theta

    @property
    def opening(self) -> int:
        """The OPENING define."""
        return 0

    def defines(self) -> dict[str, object]:
        """Kernel defines beyond OPENING."""
        return {}

    def rows(self, rows: np.ndarray) -> "Geometric":
        return self

    def __repr__(self) -> str:
        return f"Geometric({self.theta!r})"


@dataclass(frozen=True, eq=False)
class Relative:
    """GADGET's relative criterion: tolerance ``alpha``, largest angle ``theta_max``,
    angle accepted whatever a_old ``theta_min``; ``a_old``: the sinks' last accelerations
    (float64 (n, 3) array in their order, or a float64 device buffer of n x 3 in the
    caller's order; None where only the kernel's build is asked)."""

    alpha: float
    theta_max: float
    theta_min: float
    a_old: Any = field(default=None, repr=False)
    relative = True

    @property
    def build_theta(self) -> float:
        return self.theta_max

    @property
    def let_theta(self) -> float:
        """The walk may open any cell nearer than l / theta_min: a LET is cut with it."""
        return self.theta_min

    @property
    def opening(self) -> int:
        return 1

    def defines(self) -> dict[str, object]:
        return {"INV_THETA_MIN": f"{float(np.float32(1.0 / self.theta_min))!r}f"}

    def with_a_old(self, a_old) -> "Relative":
        """This criterion with other a_old (a device buffer of the same sinks)."""
        return replace(self, a_old=a_old)

    def rows(self, rows: np.ndarray) -> "Relative":
        """This criterion for the sinks ``rows`` of a host a_old."""
        return replace(self, a_old=self.a_old[rows])

    @property
    def floor_args(self) -> tuple:
        """(a_old buffer, alpha as float64): the arguments of cl/blocks.cl
        ``group_floor``."""
        return self.a_old, np.float64(self.alpha)

    def group_bounds(self, sorder: np.ndarray, gstart: np.ndarray) -> np.ndarray:
        """alpha times each group's smallest |a_old| (host a_old; ``sorder``: the sinks
        in group order, ``gstart``: each group's first)."""
        a_old = np.linalg.norm(np.asarray(self.a_old, np.float64), axis=1)[sorder]
        return self.alpha * np.minimum.reduceat(a_old, gstart)

    def __repr__(self) -> str:
        return f"Relative({self.alpha!r}, {self.theta_max!r}, {self.theta_min!r})"


Criterion = Geometric | Relative


def criterion_of(criterion: Criterion | None) -> Criterion:
    """``criterion``, or the geometric one where None (a walk of a tree built already)."""
    return Geometric() if criterion is None else criterion


def opening_criterion(g, known: bool, a_old=None) -> Criterion:
    """The criterion of a force with settings ``g`` (:class:`.settings.GravitySettings`):
    relative where asked for and forces are ``known`` (a first force has no a_old: it
    walks geometric with theta), with ``a_old`` the sinks' last accelerations."""
    if g.opening == "relative" and known:
        return Relative(g.alpha, g.theta_max, g.theta_min, a_old)
    return Geometric(g.theta)
