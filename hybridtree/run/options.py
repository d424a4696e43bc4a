"""What a run's settings say beyond their values: the API's short names for them
(``theta`` for ``gravity.theta``), the run's units and expansion history, and which of
them are gravity's.  Units: internal (G = 1)."""

from __future__ import annotations

import difflib
import math
import numbers
from pathlib import Path
from types import MappingProxyType
from typing import Any

from ..config.settings import SCHEMA, ConfigError, Settings
from ..config.units import Units
from ..errors import UserTypeError

__all__ = ["BOX_KINDS", "SHORT_NAMES", "api_settings", "background_of", "box_of",
           "settings_units", "gravity_keys"]

#: the ics.kind of a periodic box: a run of them has a box (:func:`box_of`)
BOX_KINDS = ("cosmo_box", "box_file")


#: short names the API takes for settings (``theta`` for ``gravity.theta``): every name
#: that only one section has, and ``hybrid`` for ``hybrid.enabled``
SHORT_NAMES = MappingProxyType({
    **{name: f"{section}.{name}" for section, opts in SCHEMA.items() for name in opts
       if sum(name in o for o in SCHEMA.values()) == 1 and section != "ics"},
    "hybrid": "hybrid.enabled"})


def api_settings(settings: dict[str, Any] | None, options: dict[str, Any],
                  units: Units | tuple[float, float] | None,
                  output: str | Path | None, fill: bool = False) -> dict[str, Any]:
    """Flat ``section.name`` settings from the API's arguments (short names resolved).
    ``fill``: settings from arrays, with no file behind them -- time.t_end and
    output.snapshot_dt default to values that are whole steps of the ``dt`` given."""
    flat = dict(settings or {})
    for name, value in options.items():
        if name not in SHORT_NAMES:
            near = difflib.get_close_matches(name, list(SHORT_NAMES), 1)
            hint = f" (did you mean {near[0]!r}?)" if near else ""
            raise UserTypeError(f"Simulation: unknown setting {name!r}{hint}; any setting "
                                f"can be given as settings={{'section.name': value}}")
        flat[SHORT_NAMES[name]] = value
    if units is not None:
        if isinstance(units, Units):
            units = (units.length_cm, units.mass_g)
        if not isinstance(units, (tuple, list)) or len(units) != 2:
            raise ConfigError(f"Simulation: units must be (length_cm, mass_g) or a "
                              f"hybridtree.config.units.Units, got {units!r}")
        # the values are checked (numbers, finite, > 0) with the other settings
        flat["units.length_cm"], flat["units.mass_g"] = units
    if output is not None:
        flat["output.dir"] = str(output)
    dt = flat.get("time.dt")
    if fill and _positive(dt):       # a bad dt is reported by the settings' validation
        # defaults that are whole numbers of steps of any dt the caller picks
        flat.setdefault("time.t_end", 0.0)
        dt = float(dt)
        ratio = SCHEMA["output"]["snapshot_dt"].default / dt
        flat.setdefault("output.snapshot_dt",
                        dt * max(1, round(ratio)) if math.isfinite(ratio) else dt)
    return flat


def _positive(value: Any) -> bool:
    """A finite number > 0 (a float setting's value as the validation will take it)."""
    return (isinstance(value, numbers.Real) and not isinstance(value, bool)
            and math.isfinite(value) and value > 0)


def background_of(settings: Settings) -> Any:
    """The expansion history of a cosmological run
    (:class:`hybridtree.cosmo.background.Cosmology`, internal units); None otherwise."""
    c = settings.cosmology
    if not c.enabled:
        return None
    from ..cosmo.background import Cosmology
    return Cosmology(omega_m=c.omega_m, omega_l=c.omega_lambda, omega_b=c.omega_b,
                     h=c.h, sigma8=c.sigma8, n_s=c.n_s, units=settings_units(settings))


def box_of(settings: Settings) -> float | None:
    """The comoving side of a periodic run's box (internal length); None for a run with
    open boundaries.  A periodic run integrates comoving positions and canonical momenta
    (:mod:`hybridtree.integrate.comoving`)."""
    return settings.ics.box if settings.ics.kind in BOX_KINDS else None


def settings_units(settings: Settings) -> Units:
    """The run's internal units (``[units]``)."""
    return Units(settings.units.length_cm, settings.units.mass_g)


def gravity_keys(flat: dict[str, Any]) -> dict[str, Any]:
    """The ``gravity.*`` settings of flat settings ``flat``."""
    return {k: v for k, v in flat.items() if k.startswith("gravity.")}
