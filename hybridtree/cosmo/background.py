"""The homogeneous background of a matter + Λ (+ curvature) universe, in internal units.

:class:`Cosmology` holds Ω_m, Ω_Λ, Ω_b, h, σ8, n_s and the run's :class:`~hybridtree.config.units.Units`
(G = 1; length L = ``units.length_cm``, mass M = ``units.mass_g``, velocity √(GM/L), time
L/v).  Every method takes and returns internal units: times in L/v, rates in v/L, comoving
wavenumbers in 1/L, power in L³, densities in M/L³.

What comes from colossus and what is computed here:

* colossus (a :class:`colossus.cosmology.cosmology.Cosmology` object of our own, never the
  global "current" cosmology, so that nothing else in the process is changed or changes us)
  gives E(z) = H/H0, Ω_m(z), Ω_k(z) and the linear matter power spectrum at z = 0: the
  Eisenstein & Hu (1998) transfer function (with baryon wiggles) and primordial tilt n_s,
  normalized to σ8 (colossus model ``eisenstein98``, interpolated by colossus to far better
  than that fit's own ~5 %).
* Radiation is off (colossus ``relspecies=False``): H² = H0² (Ω_m a⁻³ + Ω_k a⁻² + Ω_Λ),
  the Friedmann model that an N-body run with Newtonian gravity plus the Λ term
  Ω_Λ H0² r follows.  (Radiation would change t(a) by ~1e-4 at z = 50, so a run that
  took a(t) from a radiation model would start out of step with its own dynamics.)
  The transfer function still knows T_CMB (it sets the baryon physics before
  decoupling), as in every N-body initial-condition code.
* The two background integrals, the age t(a) = ∫ da/(a H) and the growth integral
  ∫ da/(a H)³, are evaluated here with :func:`scipy.integrate.quad` over E(a) from
  colossus, in variables that make the integrands smooth at a = 0 (u = a^{3/2}, a^{5/2}).
  colossus's own exact versions integrate over z ∈ [z, ∞) and lose accuracy at high z
  (measured with colossus 1.4: D(a = 1e-3) off by 5e-4, t(a = 1e-4) by 2e-7), and its
  interpolated tables are good to ~1e-5 only for z < 200; here both are good to ~1e-12.

Only a cosmological constant (w = -1) is supported: the growth integral and f(a) below
hold for it alone.  Flat when Ω_m + Ω_Λ = 1 (to :data:`FLAT_TOL`), otherwise open or
closed (Ω_k = 1 - Ω_m - Ω_Λ; colossus ``flat=False``).  colossus is made with
``persistence=''``: it reads and writes no cache files (by default it keeps tables under
~/.colossus), so read-only homes and CI work and nothing leaks between runs.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from functools import cached_property
from types import MappingProxyType

import numpy as np

from ..config.units import KM_CM, MPC_CM, Units

__all__ = ["Cosmology", "MPC_CM", "KM_CM", "FLAT_TOL"]

FLAT_TOL = 1e-12                        # |Ω_m + Ω_Λ - 1| below this is taken as flat

_PS_MODEL = "eisenstein98"              # colossus's Eisenstein & Hu (1998) P(k), with BAO
_QUAD = MappingProxyType(dict(epsabs=0.0, epsrel=1e-13, limit=200))
_NEWTON_MAX = 30                        # a_of_t iterations (2-4 are used in practice)
_NEWTON_TOL = 1e-14                     # |Δ ln a| that ends a_of_t's Newton iteration
_TABLE_LOGA = (-12.0, 4.0, 161)         # log10 a range and size of a_of_t's first-guess table


@dataclass(frozen=True)
class Cosmology:
    """A ΛCDM (w = -1) cosmology with methods in the internal units of ``units``.

    Parameters: ``omega_m`` (matter, dark + baryons, at z = 0), ``omega_l`` (Λ),
    ``omega_b`` (baryons: only the transfer function uses it; N-body particles carry all of
    Ω_m), ``h`` (H0 = 100 h km/s/Mpc), ``sigma8`` (rms linear δ in 8 Mpc/h top-hat spheres
    at z = 0), ``n_s`` (primordial tilt), ``units`` (the run's units).

    Scale factor a = 1 today; arrays are accepted wherever ``a``, ``t`` or ``k`` is.
    """

    omega_m: float
    omega_l: float
    omega_b: float
    h: float
    sigma8: float
    n_s: float
    units: Units

    def __post_init__(self) -> None:
        for name in ("omega_m", "omega_l", "omega_b", "h", "sigma8", "n_s"):
            v = getattr(self, name)
            if not (isinstance(v, (int, float, np.floating, np.integer)) and math.isfinite(v)):
                raise ValueError(f"{name} must be a finite number, got {v!r}")
        if not 0.0 < self.omega_m:
            raise ValueError(f"omega_m must be > 0, got {self.omega_m}")
        if self.omega_l < 0.0:
            raise ValueError(f"omega_l must be >= 0, got {self.omega_l}")
        if not 0.0 < self.omega_b < self.omega_m:
            raise ValueError(f"omega_b must be in (0, omega_m), got {self.omega_b}")
        if not (self.h > 0.0 and self.sigma8 > 0.0):
            raise ValueError(f"h and sigma8 must be > 0, got {self.h}, {self.sigma8}")
        if not isinstance(self.units, Units):
            raise TypeError(f"units must be a hybridtree.config.units.Units, got {type(self.units).__name__}")

    def __getstate__(self) -> dict:
        # the fields only: the cached colossus object and tables are rebuilt on demand, so
        # a Cosmology pickles small (e.g. to send to MPI processes)
        return {name: getattr(self, name) for name in self.__dataclass_fields__}

    def __setstate__(self, state: dict) -> None:
        for name, value in state.items():
            object.__setattr__(self, name, value)

    # --- parameters ----------------------------------------------------------------

    @property
    def flat(self) -> bool:
        """True when Ω_m + Ω_Λ = 1 to within :data:`FLAT_TOL`."""
        return abs(self.omega_m + self.omega_l - 1.0) <= FLAT_TOL

    @property
    def omega_k(self) -> float:
        """Curvature density Ω_k = 1 - Ω_m - Ω_Λ at z = 0 (0 when flat)."""
        return 0.0 if self.flat else 1.0 - self.omega_m - self.omega_l

    @cached_property
    def H0(self) -> float:
        """Hubble constant 100 h km/s/Mpc in internal units (1 / time unit)."""
        return 100.0 * self.h * KM_CM / MPC_CM * self.units.time_s

    @property
    def lambda_term(self) -> float:
        """λ = Ω_Λ H0² (internal units, 1 / time²): the cosmological constant's
        acceleration λ r on a particle at physical distance r from the centre of the Hubble
        flow -- the one place a run takes it from (its kicks and its potential energy
        -½ λ Σ m r², :func:`hybridtree.state.quantities.with_lambda_potential`)."""
        return self.omega_l * self.H0 ** 2

    @cached_property
    def rho_crit0(self) -> float:
        """Critical density today 3 H0² / (8π G), G = 1, in internal mass / length³.

        Uses hybridtree's G (CODATA 2018) through the units, not colossus's constants."""
        return 3.0 * self.H0 ** 2 / (8.0 * math.pi)

    @cached_property
    def mpc_h(self) -> float:
        """1 Mpc/h in internal length units (what converts colossus's k and P)."""
        return MPC_CM / self.h / self.units.length_cm

    def particle_mass(self, spacing: float) -> float:
        """Mass Ω_m ρ_crit,0 spacing³ (internal mass) of a particle standing for a comoving
        cube of side ``spacing`` (internal length) at the mean matter density."""
        return self.omega_m * self.rho_crit0 * float(spacing) ** 3

    @cached_property
    def colossus(self):
        """This cosmology's own colossus ``Cosmology`` (radiation off, no file cache)."""
        from colossus.cosmology import cosmology as cc
        kw = dict(flat=True) if self.flat else dict(flat=False, Ode0=float(self.omega_l))
        name = (f"hybridtree_Om{self.omega_m!r}_Ol{self.omega_l!r}_Ob{self.omega_b!r}"
                f"_h{self.h!r}_s8{self.sigma8!r}_ns{self.n_s!r}")
        return cc.Cosmology(name=name, Om0=float(self.omega_m), Ob0=float(self.omega_b),
                            H0=100.0 * float(self.h), sigma8=float(self.sigma8),
                            ns=float(self.n_s), relspecies=False, de_model="lambda",
                            interpolation=True, persistence="", print_warnings=False, **kw)

    # --- expansion -------------------------------------------------------------------

    def E(self, a):
        """H(a)/H0 (dimensionless), from colossus's E(z), z = 1/a - 1."""
        a = _positive("a", a)
        return self.colossus.Ez(1.0 / a - 1.0)

    def H(self, a):
        """Hubble rate H(a) = ȧ/a in internal units (1 / time unit)."""
        return self.H0 * self.E(a)

    def omega_m_of_a(self, a):
        """Ω_m(a) = Ω_m a⁻³ / E(a)² (dimensionless)."""
        a = _positive("a", a)
        return self.colossus.Om(1.0 / a - 1.0)

    def t_of_a(self, a):
        """Age t(a) = ∫_0^a da'/(a' H(a')) (time since the big bang) in internal time units.

        With u = a^{3/2} the integrand (2/3)/(H0 u E) is smooth at u = 0 (u E → √Ω_m), so
        quad is good to ~1e-13 relative for any a > 0."""
        return _elementwise(self._age1, _positive("a", a))

    def _age1(self, a: float) -> float:
        def integrand(u):
            return (2.0 / 3.0) / (u * self._e1(u ** (2.0 / 3.0)))
        from scipy import integrate     # here: its import costs every process 0.4-0.65 s
        return integrate.quad(integrand, 0.0, a ** 1.5, **_QUAD)[0] / self.H0

    def a_of_t(self, t):
        """Scale factor at age ``t`` (internal time units), the inverse of :meth:`t_of_a`.

        A first guess from a table of ln t(ln a) (10⁻¹² ≤ a ≤ 10⁴, matter-era t ∝ a^{3/2}
        below), then Newton in ln a, d t / d ln a = 1/H, to |Δ ln a| < 1e-14: a_of_t(t_of_a(a))
        returns a to ~1e-14 relative.  Times beyond the table start from its tangent
        d ln a = H dt (exact once Λ dominates); a ≳ 1e15 loses precision in z = 1/a - 1."""
        t = np.asarray(t, dtype=np.float64)
        if not np.all(np.isfinite(t) & (t > 0.0)):
            raise ValueError("t must be finite and > 0")
        lna = np.array(self._lna_guess(np.log(t)), dtype=np.float64).ravel()
        tt = t.ravel()
        todo = np.arange(lna.size)
        # each element iterates until its own step is small, so its result never depends
        # on the other elements of the array
        for _ in range(_NEWTON_MAX):
            a = np.exp(lna[todo])
            step = (np.atleast_1d(self.t_of_a(a)) - tt[todo]) * np.atleast_1d(self.H(a))
            step = np.clip(step, -1.0, 1.0)      # keep a wild first guess from overshooting
            lna[todo] -= step
            todo = todo[np.abs(step) >= _NEWTON_TOL]
            if not todo.size:
                break
        else:
            raise RuntimeError("a_of_t: Newton iteration did not converge")
        out = np.exp(lna).reshape(t.shape)
        return out if out.ndim else float(out)

    @cached_property
    def _age_table(self) -> tuple[np.ndarray, np.ndarray]:
        lna = np.log(10.0) * np.linspace(*_TABLE_LOGA)
        return np.log(self.t_of_a(np.exp(lna))), lna

    def _lna_guess(self, lnt: np.ndarray) -> np.ndarray:
        lnt_tab, lna_tab = self._age_table
        guess = np.interp(lnt, lnt_tab, lna_tab)
        # before the table, matter domination: a ∝ t^{2/3}; after it, the tangent
        # d ln a = H dt (exact once Λ dominates; an underestimate Newton corrects otherwise)
        early = lnt < lnt_tab[0]
        guess = np.where(early, lna_tab[0] + (2.0 / 3.0) * (lnt - lnt_tab[0]), guess)
        late = lnt > lnt_tab[-1]
        if np.any(late):
            a_end, t_end = np.exp(lna_tab[-1]), np.exp(lnt_tab[-1])
            tangent = lna_tab[-1] + self.H(a_end) * (np.exp(lnt) - t_end)
            guess = np.where(late, tangent, guess)
        return guess

    # --- linear growth -----------------------------------------------------------------

    def _growth_integral(self, a: float) -> float:
        """∫_0^a da'/(a' E(a'))³ (dimensionless), with v = a^{5/2}: the integrand
        (2/5)/(a^{3/2} E)³ is smooth and → (2/5) Ω_m^{-3/2} at a = 0."""
        def integrand(v):
            x = v ** 0.4
            return 0.4 / (x ** 1.5 * self._e1(x)) ** 3
        from scipy import integrate
        return integrate.quad(integrand, 0.0, a ** 2.5, **_QUAD)[0]

    def _growth_unnormalized(self, a: float) -> float:
        """D₊(a) = (5/2) Ω_m E(a) ∫_0^a da'/(a'E)³ (Heath 1977), → a at early times."""
        return 2.5 * self.omega_m * self._e1(a) * self._growth_integral(a)

    @cached_property
    def _growth_today(self) -> float:
        return self._growth_unnormalized(1.0)

    def growth(self, a):
        """Linear growth factor D(a) of the growing mode, D(1) = 1 (dimensionless)."""
        return _elementwise(lambda x: self._growth_unnormalized(x) / self._growth_today,
                            _positive("a", a))

    def growth_rate(self, a):
        """f(a) = d ln D / d ln a (dimensionless), exact for w = -1:

            f = d ln E / d ln a + 1 / (a² E³ I),  I = ∫_0^a da'/(a'E)³,
            d ln E / d ln a = -(3/2) Ω_m(a) - Ω_k(a),

        (differentiating D ∝ E I); f → 1 early, ≈ Ω_m(a)^0.55 later."""
        a = _positive("a", a)
        z = 1.0 / a - 1.0
        dlne = -1.5 * self.colossus.Om(z) - self.colossus.Ok(z)
        inv = _elementwise(lambda x: 1.0 / (x * x * self._e1(x) ** 3 * self._growth_integral(x)), a)
        return dlne + inv

    # --- power spectrum ----------------------------------------------------------------

    def power(self, k):
        """Linear matter power spectrum P(k) at a = 1 (scale it by D(a)² for other times).

        ``k``: comoving wavenumber in internal 1/length (k = 2π/λ); returns P in internal
        length³, with the convention σ²(R) = ∫ d³k/(2π)³ P(k) W²(kR).  colossus works in
        h/Mpc and (Mpc/h)³: k_c = k · (Mpc/h in L), P = P_c(k_c) · (Mpc/h in L)³.
        P(0) = 0 (the mean is not a fluctuation); k < 0 is an error."""
        k = np.asarray(k, dtype=np.float64)
        if not np.all(np.isfinite(k) & (k >= 0.0)):
            raise ValueError("k must be finite and >= 0")
        out = np.zeros(k.shape)
        pos = k > 0.0
        if np.any(pos):
            kc = k[pos] * self.mpc_h
            out[pos] = self.colossus.matterPowerSpectrum(kc, model=_PS_MODEL) * self.mpc_h ** 3
        return out if out.ndim else float(out)

    def sigma(self, radius, a=1.0):
        """rms linear density contrast in top-hat spheres of comoving ``radius`` (internal
        length) at scale factor ``a`` (colossus's σ(R), times D(a)); σ(8 Mpc/h) = σ8 at a = 1."""
        r = np.asarray(radius, dtype=np.float64) / self.mpc_h
        s = self.colossus.sigma(r, z=0.0, ps_args={"model": _PS_MODEL}) * self.growth(a)
        return s if np.ndim(s) else float(s)

    # --- helpers -----------------------------------------------------------------------

    def _e1(self, a):
        """E(a) for the integrands (scalar or array a > 0, no checks: they are hot)."""
        return self.colossus.Ez(1.0 / a - 1.0)


def _positive(name: str, x) -> np.ndarray | float:
    arr = np.asarray(x, dtype=np.float64)
    if not np.all(np.isfinite(arr) & (arr > 0.0)):
        raise ValueError(f"{name} must be finite and > 0")
    return arr if arr.ndim else float(arr)


def _elementwise(fn, x):
    """fn over each element of x (a float or an array), same shape back.  Element by
    element on purpose: an element's value never depends on its neighbours."""
    if np.ndim(x) == 0:
        return fn(float(x))
    arr = np.asarray(x, dtype=np.float64)
    return np.array([fn(float(v)) for v in arr.ravel()]).reshape(arr.shape)
