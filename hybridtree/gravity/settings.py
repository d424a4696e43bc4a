"""The gravity knobs of a run as one value (:class:`GravitySettings`), with "auto" settled
for a device (the opening criterion of a force: :func:`.criterion.opening_criterion`).
Lengths: the run's units."""

from __future__ import annotations

from dataclasses import dataclass, replace

import numpy as np

from ..config.schema import number_list
from ..particles import N_TYPES
from .knobs import auto_multipole, default
from .periodic import Periodic
from .softening import kernel_options
from .splitting import Changeover

__all__ = ["GravitySettings", "type_ratios"]


@dataclass(frozen=True)
class GravitySettings:
    """The gravity knobs of a run (see docs/configuration.md, ``[gravity]``/``[hybrid]``);
    the defaults are the schema's (:data:`hybridtree.config.SCHEMA`)."""

    method: str = default("method")
    eps: float = default("eps")
    theta: float = default("theta")
    n_leaf: int = default("n_leaf")
    n_group: int = default("n_group")        # 0: the device kind's default
    multipole: str = default("multipole")
    precise: bool = default("precise")
    build: str = default("build")
    remove_net_force: bool = default("remove_net_force")
    device: str = default("device")
    changeover: Changeover | None = None     # the hybrid tree's force split
    n_hard: int = 1                          # hard steps per soft step
    opening: str = default("opening")        # or "relative" (GADGET's; needs alpha)
    alpha: float = default("alpha")          # the relative criterion's tolerance
    theta_max: float = default("theta_max")  # the relative criterion's largest angle
    theta_min: float = default("theta_min")  # ... and the angle it accepts whatever a_old
    refit_fraction: float = default("refit_fraction")  # block steps: refit, not build
    softening: str = default("softening")    # "plummer" or "spline" (.softening)
    periodic: Periodic | None = None         # a periodic box: TreePM (monopole cells)
    time_split: bool = False                 # TreePM's parts apart: "short" and "long"
    #: a softening per GADGET type: each type's eps over ``eps`` (N_TYPES values; None:
    #: one eps for all), so that a rescaled eps (a cosmological run's) rescales them all
    eps_ratio: tuple[float, ...] | None = None

    @classmethod
    def from_settings(cls, g, h=None) -> "GravitySettings":
        """From the validated ``[gravity]`` and ``[hybrid]`` settings."""
        split = {}
        if h is not None and h.enabled:
            assert g.method == "tree", "config.rules.check_settings refuses this"
            split = {"changeover": Changeover(h.r_in, h.r_out, h.changeover),
                     "n_hard": h.n_hard}
        return cls(method=g.method, eps=g.eps, theta=g.theta, n_leaf=g.n_leaf,
                   n_group=g.n_group, multipole=g.multipole, precise=g.precise, build=g.build,
                   remove_net_force=g.remove_net_force, device=g.device, opening=g.opening,
                   alpha=g.alpha, theta_max=g.theta_max, theta_min=g.theta_min,
                   refit_fraction=g.refit_fraction, softening=g.softening,
                   eps_ratio=type_ratios(g.eps, g.eps_types), **split)

    def settled(self, kind: str, relative_ok: bool = True,
                cosmological: bool = False) -> "GravitySettings":
        """These settings with "auto" settled for a device of ``kind``: the multipole order
        (:func:`.knobs.auto_multipole`, ``cosmological``: a cosmological run's) and the
        opening criterion, relative where ``relative_ok`` and the run can take it (the tree
        method, no hybrid split), else geometric; a periodic box and the spline softening
        take monopoles (their kernels have no quadrupole terms yet).  The relative criterion reaches a p99
        error of 1e-3 with half the interactions of theta = 0.5 on a cusp (docs/physics.md)."""
        opening = self.opening
        if opening == "auto":
            ok = relative_ok and self.method == "tree" and self.changeover is None
            opening = "relative" if ok else "geometric"
        monopole = self.periodic is not None or self.softening == "spline"
        multipole = ("monopole" if monopole and self.multipole == "auto"
                     else auto_multipole(self.multipole, kind, cosmological))
        return replace(self, multipole=multipole, opening=opening)

    @property
    def eps_types(self) -> np.ndarray | None:
        """Each GADGET type's softening now (N_TYPES float64, length units), or None."""
        if self.eps_ratio is None:
            return None
        return float(self.eps) * np.asarray(self.eps_ratio, np.float64)

    @property
    def walk_eps(self) -> float:
        """The one softening the force kernels are built for: ``eps``, or the smallest
        where there is one per type or per particle (zero only where one is zero)."""
        if self.eps_ratio is not None:
            return float(self.eps) * min(self.eps_ratio)
        return float(np.min(self.eps)) if np.ndim(self.eps) else float(self.eps)

    def particle_eps(self, types: np.ndarray) -> np.ndarray | None:
        """The softening of particles of GADGET ``types`` (float32), or None: one for all."""
        table = self.eps_types
        return None if table is None else table.astype(np.float32)[np.asarray(types, np.intp)]

    @property
    def kernel_options(self) -> dict | None:
        """The force kernels' defines these settings add (the softening's)."""
        return kernel_options(self.softening)

    @property
    def parts(self) -> tuple[str, ...]:
        """The state's force parts: ("full",), ("hard", "soft") for the hybrid tree, or
        ("short", "long") for a periodic box whose mesh force takes longer steps than its
        tree force (GADGET's long/short time split)."""
        if self.time_split:
            assert self.periodic is not None, "the time split is TreePM's"
            return ("short", "long")
        return ("full",) if self.changeover is None else ("hard", "soft")


def type_ratios(eps: float, eps_types: str) -> tuple[float, ...] | None:
    """``gravity.eps_types`` (up to N_TYPES softenings for PartType0, 1, ..., the rest
    taking ``eps``) as ratios to ``eps``; None where there is none or all equal ``eps``."""
    values = number_list(eps_types)
    if not values:
        return None
    assert len(values) <= N_TYPES and eps > 0 and min(values) > 0, \
        "config.rules.check_settings refuses this"
    ratios = tuple(v / eps for v in values) + (1.0,) * (N_TYPES - len(values))
    return None if all(r == 1.0 for r in ratios) else ratios

