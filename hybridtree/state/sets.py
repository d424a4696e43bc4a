"""The sums of several particle sets (a report of a run of several types, issue 57): each
GADGET type's moments (of its ``type_mass`` masses) and the Lagrangian radii of every type
(about its own centre of mass, of its own mass) and of all particles.  A device state
takes them at once (:func:`set_sums`: the moments in one level chain, the radii in one
multisection, :mod:`hybridtree.device.reduce_sets`), with the bits of the sums one set at
a time (:func:`each_set_sums`: a host state's, and many processes' combined sums).
Internal units (G = 1)."""

from __future__ import annotations

from typing import Any, Callable

import numpy as np

from ..device import reduce

__all__ = ["each_set_sums", "set_sums"]


def each_set_sums(wanted: list[int], whole: tuple[np.ndarray, float] | None,
                  type_mass: Callable[[int], Any], moments: Callable[[Any], dict],
                  radii: Callable[[np.ndarray, float, Any], list[float]]
                  ) -> tuple[list[dict], list[list[float]]]:
    """:func:`set_sums`'s (moments, radii), one set at a time: ``type_mass(t)`` the masses of
    type t (0 for the others), ``moments(mass)`` their sums, ``radii(centre, total, mass)``
    the 10/50/90 % Lagrangian radii of those masses (``mass`` None: the particles' own)."""
    moms, out = [], []
    for t in wanted:
        m = type_mass(t)
        mom = moments(m)
        moms.append(mom)
        out.append(radii(mom["com"], mom["mass"], m) if mom["mass"] > 0
                   else [float("nan")] * 3)
    if whole is not None:
        out.append(radii(whole[0], whole[1], None))
    return moms, out


def set_sums(state: Any, wanted: list[int], whole: tuple[np.ndarray, float] | None
             ) -> tuple[list[dict], list[list[float]]]:
    """(moments, radii) of a :class:`.device.DeviceState` (not imported here: it imports this
    module): :meth:`.device.DeviceState.moments` of each GADGET type of
    ``wanted`` (its masses only), and the 10/50/90 % Lagrangian radii of each type about its
    centre of mass, of its mass (NaN where that is not > 0), then, where ``whole`` =
    (centre, total mass) is given, of all particles about that centre, of that mass."""
    four = state.float4 and state.n > 0             # the potential: pot_part's w
    with state.clock.device("reduce"):
        moms = reduce.reducer(state.rt, state.vel32).set_moments(
            state.n, state.types, list(wanted), state.pos, state.vel, state.mass,
            state.acc[state.pot_part] if four else state.pot, four,
            state.mass_step) if wanted else []
        sets: list[int | None] = list(wanted) + ([None] if whole is not None else [])
        centres = [m["com"] for m in moms] + ([whole[0]] if whole is not None else [])
        totals = [m["mass"] for m in moms] + ([whole[1]] if whole is not None else [])
        radii = reduce.reducer(state.rt).set_radii(state.n, state.types, sets, state.pos,
                                                   state.mass, centres, totals,
                                                   mass_step=state.mass_step) if sets else []
    return moms, radii
