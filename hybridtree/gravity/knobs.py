"""The gravity knobs of a force computation: their defaults and ranges (both from the
schema, :data:`hybridtree.config.SCHEMA`, the one home of every default and range) and
the checks that the public calls and the engine share.  Lengths: the caller's units."""

from __future__ import annotations

from typing import Any

import numpy as np

from ..config import SCHEMA
from ..errors import UserInputError
from .criterion import Relative
from .tree import Cube, build_tree
from .tree.device_build import build_device_tree

__all__ = ["BUILDS", "METHODS", "MULTIPOLE_CHOICES", "OPENINGS", "auto_multipole", "build_where",
           "check_eps", "check_tree_knobs", "default", "relative_criterion"]


def default(name: str) -> Any:
    """The schema's default of ``gravity.<name>``."""
    return SCHEMA["gravity"][name].default


def _choices(name: str) -> tuple:
    return SCHEMA["gravity"][name].choices


def _in_range(name: str, value) -> bool:
    return bool(SCHEMA["gravity"][name].check(value))


def _rule(name: str) -> str:
    return SCHEMA["gravity"][name].rule


#: Force methods: "tree" (group walk) or "direct" (exact O(N^2)).
METHODS = _choices("method")

#: Cell opening criteria of the tree walk: "geometric", (l / theta + s)^2 < d^2; or
#: "relative" (GADGET's), G M l^p / d^(p+2) <= alpha |a_old|, p = 2 for monopoles and 3
#: with quadrupoles (cl/walkcommon.cl; docs/physics.md).
OPENINGS = _choices("opening")

#: What ``multipole`` may be: the tree's orders (:data:`.tree.MULTIPOLES`) or "auto"
#: (:func:`auto_multipole`).
MULTIPOLE_CHOICES = _choices("multipole")

#: Where the tree is built: "device" (cl/treebuild.cl, the tree stays on the device) or
#: "host" (numpy, the reference).  Given the same cube both give the same cells; the
#: device's cube has a power-of-two side.
BUILDS = _choices("build")


def check_eps(eps: float) -> float:
    """``eps`` as a float, or ValueError when it is not finite and >= 0."""
    eps = float(eps)
    if not (np.isfinite(eps) and _in_range("eps", eps)):
        raise UserInputError(f"softening eps must be finite and {_rule('eps')}, got {eps!r}")
    return eps


def check_tree_knobs(n_leaf: int, n_group: int | None, multipole: str,
                     theta: float | None, build: str = "device") -> None:
    """ValueError for tree settings out of the schema's ranges (``theta=None``: not
    checked; ``n_group=None``: the device's default, so 0 is refused here)."""
    if build not in BUILDS:
        raise UserInputError(f"build must be one of {BUILDS}, got {build!r}")
    if multipole not in MULTIPOLE_CHOICES:
        raise UserInputError(f"multipole must be one of {MULTIPOLE_CHOICES}, got {multipole!r}")
    if theta is not None and not _in_range("theta", theta):
        raise UserInputError(f"theta must satisfy {_rule('theta')}, got {theta!r}")
    if not (_in_range("n_leaf", n_leaf)
            and (n_group is None or (n_group != 0 and _in_range("n_group", n_group)))):
        raise UserInputError(f"n_leaf and n_group must satisfy {_rule('n_leaf')} and 1 <= "
                         f"n_group <= {_upper('n_group')}, got {n_leaf}, {n_group}")


def auto_multipole(multipole: str, kind: str, cosmological: bool = False) -> str:
    """``multipole`` with "auto" settled for a device of ``kind`` (``Runtime.info.kind``):
    quadrupoles on CPU devices and in cosmological runs, monopoles elsewhere.  Measured
    (docs/physics.md, "Choosing the defaults"): on the H100 quadrupoles cost 1.2-1.5 x per
    step at equal error; on CPU devices the walk is bound by its cell visits, and
    quadrupoles cut the median error 2.6 x at the monopoles' time; in the cosmological
    sphere monopoles lose 7-14 % of |W| by z = 0 (a radial force bias), quadrupoles
    +0.2-0.8 % (docs/cosmology.md)."""
    if multipole != "auto":
        return multipole
    return "quadrupole" if kind == "cpu" or cosmological else "monopole"


def _upper(name: str) -> str:
    return _rule(name).rsplit("<=", 1)[-1].strip()


def relative_criterion(alpha: float, theta_max: float, theta_min: float, acc_old, n_sink: int
                       ) -> Relative:
    """The relative opening criterion of these values and ``acc_old`` (a_old of the
    sinks), checked (UserInputError, a ValueError)."""
    alpha = float(alpha)
    if not (np.isfinite(alpha) and _in_range("alpha", alpha)):
        raise UserInputError(f"alpha must be finite and {_rule('alpha')}, got {alpha!r}")
    if not _in_range("theta_max", theta_max):
        raise UserInputError(f"theta_max must satisfy {_rule('theta_max')}, got {theta_max!r}: "
                         f"beyond it a sink could lie inside an accepted cell's bounding "
                         f"sphere")
    if not (_in_range("theta_min", theta_min) and theta_min <= theta_max):
        raise UserInputError(f"theta_min must be in (0, theta_max = {theta_max}], got "
                         f"{theta_min!r}")
    a_old = np.ascontiguousarray(acc_old, np.float64)
    if a_old.shape != (n_sink, 3):
        raise UserInputError(f"acc_old must have shape ({n_sink}, 3), got {a_old.shape}")
    if not np.isfinite(a_old).all():
        raise UserInputError("acc_old must be finite")
    return Relative(alpha, theta_max, float(theta_min), a_old)


def build_where(rt, build: str, pos: np.ndarray, mass: np.ndarray, theta: float, n_leaf: int,
                multipole: str, cube: Cube | None = None, eps: np.ndarray | None = None):
    """The tree of ``pos`` built where ``build`` says (``cube``: default per builder);
    ``eps``: a softening per particle (the device build only carries it)."""
    if build == "device":
        return build_device_tree(rt, pos, mass, theta=theta, n_leaf=n_leaf, multipole=multipole,
                                 cube=cube, eps=eps)
    if eps is not None:
        raise UserInputError("a softening per particle needs the device build (build='device'): "
                         "the host's tree carries one softening")
    return build_tree(pos, mass, theta=theta, n_leaf=n_leaf, multipole=multipole, cube=cube)
