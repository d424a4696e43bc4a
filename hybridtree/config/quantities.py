"""Quantities with units at the Python API's boundary: astropy ``Quantity`` and unyt arrays
(what yt hands out) are converted to internal numbers (G = 1) in one unit system, chosen
once: a simulation's ``units`` (:class:`hybridtree.config.units.Units`: its config's
``units.length_cm``, ``units.mass_g``), default 1 kpc and 1e10 Msun.  Bare numbers pass
unchanged: they are internal already.  A quantity of the wrong dimension (a mass given
as ``eps``) is one :class:`QuantityError` line.  Results come back as quantities where
asked (:class:`QuantityView`, ``Simulation.quantities``; ``accelerations`` of quantities).

:func:`accepts_quantities` puts this at the head of a public function: its named
arguments, its ``settings`` dict and ``**options`` with a dimension (``eps``, ``dt`` ...).
"""

from __future__ import annotations

import copy
import functools
import inspect
from dataclasses import is_dataclass
from types import MappingProxyType
from typing import Any, Callable

import numpy as np

from ..errors import UserInputError
from .units import KPC_CM, MSUN_1E10_G, Units

__all__ = ["DIMENSIONS", "QuantityError", "QuantityView", "Units", "accepts_quantities",
           "has_units", "internal", "quantity", "unit_system"]

#: the cgs unit of each dimension, and the unit results are shown in
DIMENSIONS = MappingProxyType({"length": ("cm", "kpc"), "mass": ("g", "Msun"), "time": ("s", "Myr"),
              "velocity": ("cm/s", "km/s"), "acceleration": ("cm/s**2", "km/(s*Myr)"),
              "potential": ("cm**2/s**2", "km**2/s**2")})
#: settings (short or full name's last part) that carry a dimension
SETTING_DIMENSIONS = MappingProxyType({"eps": "length", "r_in": "length", "r_out": "length", "box": "length",
                      "radius": "length", "dt": "time", "t_end": "time",
                      "snapshot_dt": "time"})


class QuantityError(UserInputError):
    """A quantity of the wrong dimension, or units where none can be taken."""


def _factor(units: Units, dimension: str) -> float:
    """One internal unit of ``dimension`` in cgs."""
    v, t = units.velocity_cm_per_s, units.time_s
    return {"length": units.length_cm, "mass": units.mass_g, "time": t, "velocity": v,
            "acceleration": v / t, "potential": v * v}[dimension]


def has_units(value: Any) -> bool:
    """Whether ``value`` is an astropy Quantity or a unyt array (not a plain number)."""
    return hasattr(value, "to_value") and (hasattr(value, "unit") or hasattr(value, "units"))


def unit_system(units: Any = None, settings: dict[str, Any] | None = None) -> Units:
    """The unit system: ``units`` (Units or (length_cm, mass_g)), else ``settings``'
    ``units.length_cm``/``units.mass_g``, else 1 kpc and 1e10 Msun."""
    if isinstance(units, Units):
        return units
    if units is not None:
        length, mass = units
        return Units(float(length), float(mass))
    s = settings or {}
    return Units(float(s.get("units.length_cm", KPC_CM)), float(s.get("units.mass_g",
                                                                        MSUN_1E10_G)))


def internal(value: Any, dimension: str, units: Units, name: str) -> Any:
    """``value`` in internal units: a quantity converted (float64 array, or float for a
    scalar), anything else unchanged; QuantityError naming ``name`` for a wrong dimension."""
    if not has_units(value):
        return value
    cgs = DIMENSIONS[dimension][0]
    unit = str(getattr(value, "unit", None) or getattr(value, "units", "")) or "dimensionless"
    try:
        out = np.asarray(value.to_value(cgs), np.float64) / _factor(units, dimension)
    except Exception:       # astropy's UnitConversionError, unyt's UnitConversionError ...
        raise QuantityError(f"{name}: {unit} is not a {dimension} (give it in units of "
                            f"{dimension}, e.g. {DIMENSIONS[dimension][1]}, or as a "
                            f"number in internal units)") from None
    return float(out) if out.ndim == 0 else out


def quantity(values: Any, dimension: str, units: Units, like: Any = None) -> Any:
    """Internal ``values`` as a quantity in :data:`DIMENSIONS`' shown unit: a unyt array
    when ``like`` is one, else an astropy Quantity (ImportError naming the extra without
    astropy)."""
    cgs, shown = DIMENSIONS[dimension]
    data = np.asarray(values, np.float64) * _factor(units, dimension)
    if like is not None and hasattr(like, "units") and not hasattr(like, "unit"):
        import unyt
        return unyt.unyt_array(data, cgs).to(shown)
    try:
        from astropy import units as u
    except ImportError:
        raise ImportError("results as quantities need astropy: pip install "
                          "'hybridtree[units]' (or astropy)") from None
    return (data * u.Unit(cgs)).to(shown)


class QuantityView:
    """The arrays and times of ``source`` (a Simulation) as quantities in its ``units``:
    ``pos``, ``vel``, ``mass``, ``acc``, ``pot``, ``t``, ``dt``, ``t_end``."""

    _DIMENSION = {"pos": "length", "vel": "velocity", "mass": "mass", "acc": "acceleration",
                  "pot": "potential", "t": "time", "dt": "time", "t_end": "time"}

    def __init__(self, source: Any, units: Units):
        self._source, self._units = source, units

    def __getattr__(self, name: str) -> Any:
        if name not in self._DIMENSION:
            raise AttributeError(f"quantities has no {name!r}; it has "
                                 f"{', '.join(self._DIMENSION)}")
        return quantity(getattr(self._source, name), self._DIMENSION[name], self._units)

    def __dir__(self) -> list[str]:
        return list(self._DIMENSION)


def _settings(values: dict[str, Any] | None, units: Units, where: str) -> Any:
    """A settings dict with its quantities converted (names: :data:`SETTING_DIMENSIONS`)."""
    if not values or not any(has_units(v) for v in values.values()):
        return values
    out = dict(values)
    for key, value in values.items():
        if has_units(value):
            dimension = SETTING_DIMENSIONS.get(key.rsplit(".", 1)[-1])
            if dimension is None:
                raise QuantityError(f"{where}: {key} takes no units (a number, as in a "
                                    f"config file)")
            out[key] = internal(value, dimension, units, f"{where}({key})")
    return out


def accepts_quantities(result: dict[str, str] | None = None,
                       **dimensions: str) -> Callable[[Callable], Callable]:
    """Decorator: the arguments named in ``dimensions`` (name: dimension), a ``settings``
    dict and ``**options`` may be quantities; they are converted to internal numbers in
    the function's unit system (its ``units`` argument; else the ``units`` of an argument
    that has them: ``self``, a ``Cosmology``; else the settings'; else the default) before
    it runs.  A function without a ``units`` parameter
    takes ``units=`` as a keyword.  ``result`` (field: dimension): when any argument was a
    quantity, those fields of the returned dataclass come back as quantities."""

    def decorate(func: Callable) -> Callable:
        sig = inspect.signature(func)
        own_units = "units" in sig.parameters
        var_kw = next((p.name for p in sig.parameters.values()
                       if p.kind is inspect.Parameter.VAR_KEYWORD), None)

        @functools.wraps(func)
        def wrapper(*args: Any, **kwargs: Any) -> Any:
            units_arg = kwargs.get("units") if own_units else kwargs.pop("units", None)
            bound = sig.bind_partial(*args, **kwargs)
            a = bound.arguments
            given = [a[k] for k in dimensions if k in a and has_units(a[k])]
            extra = {k: v for k, v in {**(a.get("settings") or {}),
                                       **(a.get(var_kw) or {})}.items() if has_units(v)}
            if not given and not extra:
                return func(*args, **kwargs)
            owner = [v.units for v in a.values() if isinstance(getattr(v, "units", None), Units)]
            named = {f"units.{k}": v for k, v in (a.get(var_kw) or {}).items()
                     if k in ("length_cm", "mass_g")}       # Simulation(length_cm=...)
            units = (unit_system(units_arg) if units_arg is not None else owner[0] if owner
                     else unit_system(None, {**(a.get("settings") or {}), **named}))
            where = func.__qualname__.replace(".__init__", "")
            for k, dim in dimensions.items():
                if k in a:
                    a[k] = internal(a[k], dim, units, f"{where}({k})")
            if "settings" in a:
                a["settings"] = _settings(a["settings"], units, where)
            if var_kw in a:
                a[var_kw] = _settings(a[var_kw], units, where)
            out = func(*bound.args, **bound.kwargs)
            if result and is_dataclass(out):
                like = (given or list(extra.values()))[0]
                out = copy.copy(out)
                for f, d in result.items():
                    setattr(out, f, quantity(getattr(out, f), d, units, like))
            return out

        return wrapper

    return decorate
