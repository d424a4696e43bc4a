"""Physical units of a run.  Internally G = 1; the config gives the length and mass units
in cgs, from which the velocity and time units follow:

    v_unit = sqrt(G_cgs * M_unit / L_unit),   t_unit = L_unit / v_unit.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

G_CGS = 6.67430e-8          # cm^3 g^-1 s^-2 (CODATA 2018)
GYR_S = 3.15576e16          # Julian gigayear in s


@dataclass(frozen=True)
class Units:
    length_cm: float
    mass_g: float

    @property
    def velocity_cm_per_s(self) -> float:
        return math.sqrt(G_CGS * self.mass_g / self.length_cm)

    @property
    def time_s(self) -> float:
        return self.length_cm / self.velocity_cm_per_s

    @property
    def gravitational_constant(self) -> float:
        """G in these units: 1 by construction."""
        return G_CGS * self.mass_g * self.time_s ** 2 / self.length_cm ** 3

    def attrs(self) -> dict[str, float]:
        """The attribute names that GADGET-4, pynbody and yt look for."""
        return {"UnitLength_in_cm": self.length_cm,
                "UnitMass_in_g": self.mass_g,
                "UnitVelocity_in_cm_per_s": self.velocity_cm_per_s,
                "UnitTime_in_s": self.time_s,
                "GravitationalConstant": self.gravitational_constant,
                "G_in_cgs": G_CGS}
