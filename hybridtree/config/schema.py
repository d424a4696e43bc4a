"""Every setting of a run: its type, default, allowed range or choices, and what it
means (:data:`SCHEMA`).  This table is the one place where defaults live
(``docs/configuration.md`` is generated from it: :func:`markdown_table`).  Units: lengths,
masses and times are in the run's internal units (G = 1); ``[units]`` says what those are
in cgs.  Rules that relate settings to each other are in :mod:`hybridtree.config.rules`.
"""

from __future__ import annotations

import math
import numbers
import re
from dataclasses import dataclass
from typing import Any, Callable

from ..errors import HybridtreeError
from .units import KPC_CM, MSUN_1E10_G

__all__ = ["ConfigError", "Option", "SCHEMA", "markdown_table", "number_list", "redshift_list"]


class ConfigError(HybridtreeError, ValueError):
    """A mistake in a config file or a ``--set`` override (a user error).

    ``keys``: the settings (``section.name``) the mistake is about, so that the caller
    can say where it came from (the file, or a ``--set`` override)."""

    def __init__(self, message: str, keys: tuple[str, ...] = ()):
        super().__init__(message)
        self.keys = tuple(keys)


@dataclass(frozen=True)
class Option:
    kind: type                             # bool, int, float or str
    default: Any
    doc: str
    check: Callable[[Any], bool] | None = None
    rule: str = ""                         # the check, in words, for error messages
    choices: tuple = ()
    #: other spellings of a value taken before the type check (e.g. a list of numbers for
    #: a setting stored as text); returns the value unchanged when it does not apply
    convert: Callable[[Any], Any] | None = None


def _opt(kind, default, doc, check=None, rule="", choices=(), convert=None):
    return Option(kind, default, doc, check, rule, tuple(choices), convert)


def number_list(text: str) -> list[float]:
    """``'8.9, 2.5 0.93'`` -> [8.9, 2.5, 0.93]: numbers separated by commas or spaces, as
    list settings are stored (ValueError for a word that is no number)."""
    return [float(w) for w in str(text).replace(",", " ").split()]


def redshift_list(text: str) -> list[float]:
    """``'8.9, 2.5, 0.93, 0'`` -> [8.9, 2.5, 0.93, 0.0] (ValueError if not numbers >= 0)."""
    values = number_list(text)
    if any(not math.isfinite(z) or z < 0 for z in values):
        raise ValueError(f"redshifts must be numbers >= 0: {text!r}")
    return values


def _numbers_as_text(value: Any) -> Any:
    """A number or a list of numbers as the text '8.9, 2.5'; anything else unchanged."""
    items = value if isinstance(value, list) else [value]
    if not all(isinstance(v, numbers.Real) and not isinstance(v, bool) for v in items):
        return value
    return ", ".join(repr(float(v)) for v in items)


def _eps_type_list(text: str) -> bool:
    try:
        values = number_list(text)
    except ValueError:
        return False
    return len(values) <= 6 and all(math.isfinite(e) and e > 0 for e in values)


def _redshift_list(text: str) -> bool:
    try:
        redshift_list(text)
    except ValueError:
        return False
    return True


SCHEMA: dict[str, dict[str, Option]] = {
    "ics": {
        "kind": _opt(str, "plummer", "initial conditions: plummer (Hénon units), hernquist "
                     "(G = M = a = 1), cold_sphere (uniform, at rest), cosmo_sphere (a sphere "
                     "cut from a ΛCDM realization at cosmology.z_start; needs "
                     "cosmology.enabled), cosmo_box (a periodic ΛCDM box of side ics.box, every grid point; "
                     "needs cosmology.enabled; TreePM forces), file (a GADGET-style HDF5 file or a "
                     "GADGET-2 binary set, every particle keeping its PartTypeN), "
                     "box_file (a periodic box's ICs from MUSIC, monofonIC, N-GenIC, 2LPTic or "
                     "GADGET-4: GADGET-2 binary or HDF5, ics.file; a periodic run as cosmo_box) "
                     "or galaxy (a disk galaxy in equilibrium: ics.model)",
                     choices=("plummer", "hernquist", "cold_sphere", "cosmo_sphere", "cosmo_box",
                              "file", "box_file", "galaxy")),
        "model": _opt(str, "milky_way", "kind = galaxy: the disk galaxy's parameter set: "
                      "milky_way or m31 (GOTHIC's M31 model); ics.n particles split over halo "
                      "(PartType1), disk (2) and bulge (3) by mass (docs/galaxies.md)",
                      choices=("milky_way", "m31")),
        "n": _opt(int, 10000, "number of particles (generated models)",
                  lambda v: 1 <= v <= 2**40, "1 <= n <= 2^40"),
        "seed": _opt(int, 0, "random seed (same seed, same particles)", lambda v: v >= 0, ">= 0"),
        "r_max": _opt(float, 100.0, "plummer/hernquist: radii beyond r_max scale radii are "
                      "redrawn; at least 1 % of the mass must lie inside (plummer: r_max >= "
                      "0.2207, hernquist: r_max >= 0.1112)", lambda v: v > 0, "> 0"),
        "radius": _opt(float, 1.0, "cold_sphere: radius; cosmo_sphere: comoving radius of "
                       "the sphere cut from the cube (at most ics.box / 2; internal length "
                       "units)", lambda v: v > 0, "> 0"),
        "n_grid": _opt(int, 64, "cosmo_sphere, cosmo_box: grid points (particles) per side of the "
                       "cube", lambda v: 2 <= v <= 4096, "2 <= n_grid <= 4096"),
        "box": _opt(float, 100.0, "cosmo_sphere, cosmo_box: comoving side of the cube "
                    "(internal length units; cosmo_box: the periodic box)", lambda v: v > 0, "> 0"),
        "lpt": _opt(int, 1, "cosmo_sphere, cosmo_box: Lagrangian perturbation theory order: 1 "
                    "(Zel'dovich) or 2 (2LPT)", lambda v: v in (1, 2), "1 or 2"),
        "file": _opt(str, "", "kind = file: path of the HDF5 file (a relative one, from the "
                     "config or from --set, is read from the config file's folder)"),
        "file_length_cm": _opt(float, 0.0, "kind = box_file: the file's length unit in cm, "
                               "with h (3.085678e24 for Mpc/h, as MUSIC writes); 0 = what the "
                               "file states, else GADGET's kpc/h", lambda v: v >= 0, ">= 0"),
        "types": _opt(str, "all", "kind = file: which particles: all (every PartTypeN, "
                      "flattened) or one group name such as PartType1"),
    },
    "gravity": {
        "method": _opt(str, "tree", "tree (group walk) or direct (exact O(N^2))",
                       choices=("tree", "direct")),
        "eps": _opt(float, 0.01, "softening length, Plummer's or the Plummer-equivalent of "
                    "the spline (cosmological runs: comoving, so the physical softening is "
                    "a × eps)", lambda v: v >= 0, ">= 0"),
        "eps_types": _opt(str, "", "a softening per particle type (GADGET-4's softening "
                          "classes): the lengths of PartType0, 1, ... in gravity.eps's units "
                          "and convention, e.g. [0.05, 0.2, 0.01, 0.01] (types not listed take "
                          "gravity.eps); a pair takes the larger of its two (docs/galaxies.md)",
                          _eps_type_list, "up to 6 numbers > 0, separated by commas or spaces",
                          convert=_numbers_as_text),
        "softening": _opt(str, "plummer", "pair softening: plummer, or spline (GADGET's cubic "
                          "spline with eps Plummer-equivalent: exactly Newtonian beyond "
                          "2.8 eps; needs eps > 0 and monopole cells; docs/physics.md)",
                          choices=("plummer", "spline")),
        "theta": _opt(float, 0.5, "opening angle (geometric criterion; with the relative "
                      "one: of the first force, which has no old acceleration yet)",
                      lambda v: 0 < v <= 1.2, "0 < theta <= 1.2"),
        "opening": _opt(str, "auto", "cell opening criterion: geometric ((l / theta + "
                        "s)^2 < d^2), relative (GADGET's: M l^2 / d^4 <= alpha |a_old|) or "
                        "auto: relative where the run can take it (the tree method without "
                        "the hybrid tree; on many processes the state on the device and no "
                        "parallel.overlap), else geometric (docs/physics.md)",
                        choices=("auto", "geometric", "relative")),
        "alpha": _opt(float, 0.003, "relative opening criterion: tolerance on the force "
                      "error of one cell relative to the sink's acceleration",
                      lambda v: 0 < v <= 1, "0 < alpha <= 1"),
        "theta_max": _opt(float, 1.0, "relative opening criterion: the largest opening "
                          "angle it may accept (GADGET-4's ErrTolThetaMax)",
                          lambda v: 0 < v <= 1.15, "0 < theta_max <= 1.15"),
        "theta_min": _opt(float, 0.25, "relative opening criterion: cells smaller than this "
                          "angle are accepted whatever the sink's acceleration (near a "
                          "system's centre |a| -> 0 would open every cell)",
                          lambda v: 0 < v <= 1.15, "0 < theta_min <= 1.15"),
        "n_leaf": _opt(int, 16, "most particles in a tree leaf", lambda v: 1 <= v <= 1024,
                       "1 <= n_leaf <= 1024"),
        "n_group": _opt(int, 0, "most sinks sharing one walk; 0 = the device's default",
                        lambda v: 0 <= v <= 1024, "0 <= n_group <= 1024"),
        "multipole": _opt(str, "auto", "cell moments: monopole, quadrupole, or auto: "
                          "quadrupoles on CPU devices and in cosmological runs, monopoles "
                          "on GPUs otherwise (the cheaper at equal accuracy; "
                          "docs/physics.md)",
                          choices=("auto", "monopole", "quadrupole")),
        "precise": _opt(bool, True, "direct method: hi + lo float32 coordinates"),
        "build": _opt(str, "device", "where the tree is built: device (OpenCL; the tree stays "
                      "there for the walk) or host (numpy, the reference)",
                      choices=("device", "host")),
        "remove_net_force": _opt(bool, True, "subtract the mass-weighted mean acceleration "
                                 "(the tree's spurious net force) so that total momentum is "
                                 "conserved"),
        "refit_fraction": _opt(float, 0.05, "block steps: a force of the active particles "
                               "refits the last tree (its cells kept, their moments and "
                               "sides redone for the moved particles) instead of building "
                               "one, while the forces on refits since the last build, its "
                               "own included, stay within refit_fraction × N: a force of "
                               "more particles, and every force of all, builds; 0 = build "
                               "for every force.  The default refits the small substeps "
                               "of the deepest bins (docs/physics.md).  One process, "
                               "device state, no periodic box (else: always builds)",
                               lambda v: 0 <= v <= 100, "0 <= refit_fraction <= 100"),
        "pm_grid": _opt(int, 0, "periodic boxes: mesh points per side of the long-range "
                        "(PM) mesh (GADGET's PMGRID); 0 = the smallest power of two >= "
                        "N^(1/3), at least 32", lambda v: v == 0 or 8 <= v <= 4096,
                        "0 or 8 <= pm_grid <= 4096"),
        "asmth": _opt(float, 1.25, "periodic boxes: the force split scale r_s in mesh cells "
                      "(GADGET's ASMTH)", lambda v: 0.5 <= v <= 8, "0.5 <= asmth <= 8"),
        "rcut": _opt(float, 7.0, "periodic boxes: the short-range cut in units of r_s "
                     "(GADGET's RCUT; GADGET-2 took 4.5, faster and less accurate: "
                     "docs/physics.md)", lambda v: 2 <= v <= 10, "2 <= rcut <= 10"),
        "device": _opt(str, "", "OpenCL device: '' = automatic (HYBRIDTREE_DEVICE, "
                       "PYOPENCL_CTX, else a GPU first), or 'gpu', 'cpu', 'P:D', a name part"),
    },
    "hybrid": {
        "enabled": _opt(bool, False, "hybrid tree: soft force every time.dt, hard force "
                        "(pairs closer than r_out) every time.dt / n_hard; false = plain tree"),
        "r_in": _opt(float, 0.01, "changeover: pair force entirely hard below r_in",
                     lambda v: v >= 0, ">= 0"),
        "r_out": _opt(float, 0.1, "changeover: pair force entirely soft beyond r_out "
                      "(choose a few mean interparticle distances of the core)",
                      lambda v: v > 0, "> 0"),
        "n_hard": _opt(int, 4, "hard steps per soft step", lambda v: 1 <= v <= 4096,
                       "1 <= n_hard <= 4096"),
        "changeover": _opt(str, "dll", "W(r) shape: dll (Duncan, Levison & Lee 1998) or "
                           "poly7 (C3 polynomial)", choices=("dll", "poly7")),
    },
    "time": {
        "dt": _opt(float, 1.0 / 128, "leapfrog step shared by all particles (the soft step "
                   "of a hybrid run; the largest step with time.stepping = block)",
                   lambda v: v > 0, "> 0"),
        "t_end": _opt(float, 1.0, "end time (a whole number of steps)", lambda v: v >= 0, ">= 0"),
        "stepping": _opt(str, "shared", "shared (every particle takes time.dt) or block "
                         "(each particle in a power-of-two bin of time.dt: dt / 2^k <= eta "
                         "sqrt(eps / |a|); a periodic box: the short range in bins of "
                         "each step in ln a, one process)", choices=("shared", "block")),
        "eta": _opt(float, 0.2, "block steps: accuracy of dt = eta sqrt(eps / |a|) (GADGET's "
                    "ErrTolIntAccuracy 0.025 is eta = 0.22)", lambda v: 0 < v <= 10,
                    "0 < eta <= 10"),
        "max_bin": _opt(int, 16, "block steps: the deepest bin (smallest step time.dt / "
                        "2^max_bin)", lambda v: 0 <= v <= 63, "0 <= max_bin <= 63"),
        "eta_v": _opt(float, 0.0, "block steps: also dt <= eta_v eps / |v|, a step crosses at "
                      "most eta_v softening lengths (a particle through a softened centre, "
                      "where |a| -> 0, gets no large step there; docs/galaxies.md); 0: off",
                      lambda v: 0 <= v <= 1e6, "0 <= eta_v <= 1e6"),
        "rebin": _opt(str, "auto", "block steps: where a particle takes a new bin: at "
                      "each of its synchronisations (substep; GADGET's and GOTHIC's rule), "
                      "or only where all bins are (step: the bins kept through each "
                      "largest step, whose kicks and drifts are then a palindrome, so that "
                      "the energy error does not drift; docs/galaxies.md); auto: step, "
                      "but substep in a periodic box (not measured there)",
                      choices=("auto", "substep", "step")),

    },
    "cosmology": {
        "enabled": _opt(bool, False, "a cosmological run: an expanding sphere with vacuum "
                        "outside, in physical coordinates with the Λ term Ω_Λ H0² r; time "
                        "runs from z_start to z_end in `steps` steps, and time.dt, "
                        "time.t_end and output.snapshot_dt are not used"),
        "omega_m": _opt(float, 0.3, "matter density parameter today", lambda v: 0 < v <= 10,
                        "0 < omega_m <= 10"),
        "omega_lambda": _opt(float, 0.7, "cosmological-constant density parameter today",
                             lambda v: 0 <= v <= 10, "0 <= omega_lambda <= 10"),
        "omega_b": _opt(float, 0.045, "baryon density parameter (the transfer function "
                        "only; all particles are collisionless)",
                        lambda v: 0 < v < 1, "0 < omega_b < 1"),
        "h": _opt(float, 0.7, "H0 / (100 km/s/Mpc)", lambda v: 0 < v < 10, "0 < h < 10"),
        "sigma8": _opt(float, 0.8, "rms linear density contrast in 8 Mpc/h spheres today",
                       lambda v: v > 0, "> 0"),
        "n_s": _opt(float, 0.96, "primordial spectral index", lambda v: 0 < v < 3,
                    "0 < n_s < 3"),
        "z_start": _opt(float, 49.0, "redshift of the initial conditions", lambda v: v > 0,
                        "> 0"),
        "z_end": _opt(float, 0.0, "final redshift", lambda v: v >= 0, ">= 0"),
        "steps": _opt(int, 256, "steps from z_start to z_end", lambda v: v >= 1, ">= 1"),
        "stepping": _opt(str, "time", "steps uniform in time or in ln a",
                         choices=("time", "log_a")),
        "short_steps": _opt(int, 1, "periodic boxes: steps of the tree's short-range force "
                            "per step of the mesh's long-range force (GADGET's long/short "
                            "time split); 1 = both every step (TREEPM_NOTIMESPLIT)",
                            lambda v: 1 <= v <= 64, "1 <= short_steps <= 64"),
    },
    "output": {
        "dir": _opt(str, "out", "output folder (relative to the working directory)"),
        "snapshot_dt": _opt(float, 0.25, "time between snapshots (a whole number of steps); "
                            "the first and last states are always written",
                            lambda v: v > 0, "> 0"),
        "diag_every": _opt(int, 8, "steps between diagnostics reports", lambda v: v >= 1, ">= 1"),
        "energy_warning": _opt(float, 0.01, "warn (run.log, the console, the end line; the "
                               "run goes on and ends with status 0) once the size of the "
                               "relative energy error dE/E first exceeds this (cosmological "
                               "spheres: dE over the potential energy W); 0 = never",
                               lambda v: v >= 0 and math.isfinite(v), ">= 0, finite"),
        "redshifts": _opt(str, "", "cosmological runs: snapshots at the steps closest to "
                          "these redshifts, e.g. '8.9, 2.5, 0.93, 0' or [8.9, 2.5, 0.93, 0] "
                          "(the first and last "
                          "states are always written)", _redshift_list, "numbers >= 0, "
                          "separated by commas or spaces", convert=_numbers_as_text),
        "snapshot_on_signal": _opt(bool, True, "on SIGTERM/SIGINT finish the current step, "
                                   "write a snapshot to restart from, then stop (exit 143/130)"),
        "snapshot_files": _opt(str, "single", "with several MPI processes: single (gathered "
                               "on process 0 into snapshot_NNNN.hdf5; small N) or per_process "
                               "(snapshot_NNNN.K.hdf5, GADGET's multi-file snapshots)",
                               choices=("single", "per_process")),
        "power_spectrum": _opt(bool, False, "periodic boxes: the matter power spectrum of "
                               "every snapshot as powerspec_NNNN.txt beside it (as hybridtree "
                               "pk writes it: TSC, interlaced, shot noise subtracted; k in "
                               "h/Mpc, P in (Mpc/h)^3); the run waits for it"),
        "halos": _opt(bool, False, "cosmological runs: the friends-of-friends halos of every "
                      "snapshot as GADGET-4's fof_tab_NNN.hdf5 beside it (as hybridtree halos "
                      "writes it: b = 0.2, at least 20 particles; GADGET-4's FOF option); the "
                      "run waits for it"),
        "double_precision": _opt(bool, True, "scheduled snapshots' Coordinates, Velocities, "
                                 "Masses, Potential, Acceleration in float64 (false: float32, "
                                 "GADGET's default without OUTPUT_IN_DOUBLEPRECISION: half the "
                                 "disk, positions to 2^-24 of their size; such a snapshot is no "
                                 "restart point: restart points are always float64)"),
        "gadget2": _opt(bool, False, "also every snapshot as one GADGET-2 binary file "
                        "snapshot_NNNN.gadget2 (format 2, double precision, 64-bit IDs, "
                        "GADGET's kpc, 1e10 Msun, km/s; a box in its comoving convention) for "
                        "tools that read only those; isolated runs and periodic boxes; the "
                        "HDF5 snapshot stays the restart point"),
    },
    "parallel": {
        "grid": _opt(str, "", "domain grid nx x ny x nz such as '2x2x1' (its product must be "
                     "the number of processes); '' = the most cubic one",
                     lambda v: v == "" or re.fullmatch(r"[1-9]\d*x[1-9]\d*x[1-9]\d*", v)
                     is not None, "'' or AxBxC"),
        "samples": _opt(int, 2000, "decomposition: particles sampled per process (more: "
                        "better balance, more traffic to process 0)",
                        lambda v: 10 <= v <= 10_000_000, "10 <= samples <= 1e7"),
        "overlap": _opt(bool, False, "send the LETs without blocking and walk the local "
                        "tree meanwhile, then a tree of what arrived (false: one tree of "
                        "local + received particles, walked by the local groups after the "
                        "exchange; closest to the one-process forces, and faster on the "
                        "H100, docs/history.md, session 8)"),
        "spread_devices": _opt(bool, True, "processes on one node take different OpenCL "
                               "devices of those gravity.device matches (node-local rank "
                               "modulo their number); false: all take the same one"),
    },
    "units": {
        "length_cm": _opt(float, KPC_CM, "internal length unit in cm (default 1 kpc)",
                          lambda v: v > 0, "> 0"),
        "mass_g": _opt(float, MSUN_1E10_G, "internal mass unit in g (default 1e10 Msun); "
                       "velocity and time units follow from G = 1", lambda v: v > 0, "> 0"),
    },
    "memory": {
        "velocities": _opt(str, "float64", "the run state's velocities: float64, or float32 "
                           "(GADGET-4's and PKDGRAV3's single-precision velocities: 12 bytes "
                           "per particle less; each kick computes in float64 and rounds the "
                           "velocity to float32 once, each drift widens it exactly; "
                           "snapshots store them as float64, exactly; docs/physics.md)",
                           choices=("float64", "float32")),
        "mesh": _opt(str, "float64", "a periodic box's PM mesh and force: float64 (three "
                     "complex128 meshes, a sort of the particles by cell, float64 force "
                     "parts), or float32 (GADGET-4's single-precision FFT: two float32 "
                     "meshes and nothing per particle, a deposit with exact integer sums, "
                     "the force kept as the walk's float4 with the mesh added, one mass "
                     "for all where the particles share one; a power-of-two pm_grid; "
                     "docs/physics.md)", choices=("float64", "float32")),
        "ics_fields": _opt(str, "float64", "the displacement fields of ics.kind = "
                           "cosmo_box and cosmo_sphere while the initial conditions are "
                           "made: float64, or float32 (half their host memory, about 24 "
                           "instead of 48 bytes per grid point for 2LPT; positions and "
                           "velocities differ from float64's by about 1e-7 of the "
                           "displacements; docs/cosmology.md)",
                           choices=("float64", "float32")),
    },
}


def markdown_table() -> str:
    """The settings reference (docs/configuration.md's table)."""
    rows = ["| setting | type | default | meaning |", "|---|---|---|---|"]
    for section, opts in SCHEMA.items():
        for name, opt in opts.items():
            extra = f" ({' / '.join(opt.choices)})" if opt.choices else (
                f" ({opt.rule})" if opt.rule else "")
            default = repr(opt.default) if opt.kind is str else (
                str(opt.default).lower() if opt.kind is bool else f"{opt.default:g}")
            rows.append(f"| `{section}.{name}` | {opt.kind.__name__} | `{default}` | "
                        f"{opt.doc}{extra} |")
    return "\n".join(rows) + "\n"
