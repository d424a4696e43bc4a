"""Physical units of a run.  Internally G = 1; the config gives the length and mass units
in cgs, from which the velocity and time units follow:

    v_unit = sqrt(G_cgs * M_unit / L_unit),   t_unit = L_unit / v_unit.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

G_CGS = 6.67430e-8          # cm^3 g^-1 s^-2 (CODATA 2018)
GYR_S = 3.15576e16          # Julian gigayear in s
KPC_CM = 3.0856775814913673e21      # 1 kpc in cm (IAU 2015 parsec)
MPC_CM = 3.0856775814913673e24      # 1 Mpc in cm
KM_CM = 1.0e5                       # 1 km in cm
MSUN_G = 1.98841e33                 # solar mass in g (IAU nominal)
MSUN_1E10_G = 1.98841e43            # 10^10 solar masses in g
H100_PER_S = 100.0 * KM_CM / MPC_CM  # H0 = 100 km/s/Mpc in 1/s (times h)


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
