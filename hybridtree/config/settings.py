"""A run's settings: read ``configs/*.toml``, validate, report mistakes clearly.

Every setting, its type, its default and its allowed range is in :data:`SCHEMA`; this
table is the one place where defaults live (``docs/configuration.md`` is generated
from it: ``python -m hybridtree.config``).  Units: lengths, masses and times are in the
run's internal units (G = 1); ``[units]`` says what those are in cgs.
"""

from __future__ import annotations

import difflib
import math
import re
import tomllib
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Callable

from ..errors import HybridtreeError
from .units import KPC_CM, MSUN_1E10_G

__all__ = ["ConfigError", "Option", "SCHEMA", "Settings", "load_config", "parse_overrides",
           "settings_from_flat", "markdown_table", "KPC_CM", "MSUN_1E10_G"]


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


def redshift_list(text: str) -> list[float]:
    """``'8.9, 2.5, 0.93, 0'`` -> [8.9, 2.5, 0.93, 0.0] (ValueError if not numbers >= 0)."""
    values = [float(w) for w in text.replace(",", " ").split()]
    if any(not math.isfinite(z) or z < 0 for z in values):
        raise ValueError(f"redshifts must be numbers >= 0: {text!r}")
    return values


def _numbers_as_text(value: Any) -> Any:
    """A number or a list of numbers as the text '8.9, 2.5'; anything else unchanged."""
    items = value if isinstance(value, list) else [value]
    if not all(isinstance(v, (int, float)) and not isinstance(v, bool) for v in items):
        return value
    return ", ".join(repr(float(v)) for v in items)


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
                     "cosmology.enabled) or file (a GADGET-style HDF5 file)",
                     choices=("plummer", "hernquist", "cold_sphere", "cosmo_sphere", "file")),
        "n": _opt(int, 10000, "number of particles (generated models)",
                  lambda v: 1 <= v <= 2**40, "1 <= n <= 2^40"),
        "seed": _opt(int, 0, "random seed (same seed, same particles)", lambda v: v >= 0, ">= 0"),
        "r_max": _opt(float, 100.0, "plummer/hernquist: radii beyond r_max scale radii are "
                      "redrawn", lambda v: v > 0, "> 0"),
        "radius": _opt(float, 1.0, "cold_sphere: radius; cosmo_sphere: comoving radius of "
                       "the sphere cut from the cube (at most ics.box / 2; internal length "
                       "units)", lambda v: v > 0, "> 0"),
        "n_grid": _opt(int, 64, "cosmo_sphere: grid points (particles) per side of the "
                       "cube", lambda v: 2 <= v <= 4096, "2 <= n_grid <= 4096"),
        "box": _opt(float, 100.0, "cosmo_sphere: comoving side of the cube (internal length "
                    "units)", lambda v: v > 0, "> 0"),
        "lpt": _opt(int, 1, "cosmo_sphere: Lagrangian perturbation theory order: 1 "
                    "(Zel'dovich) or 2 (2LPT)", lambda v: v in (1, 2), "1 or 2"),
        "file": _opt(str, "", "kind = file: path of the HDF5 file (relative to the config "
                     "file's folder)"),
        "types": _opt(str, "all", "kind = file: which particles: all (every PartTypeN, "
                      "flattened) or one group name such as PartType1"),
    },
    "gravity": {
        "method": _opt(str, "tree", "tree (group walk) or direct (exact O(N^2))",
                       choices=("tree", "direct")),
        "eps": _opt(float, 0.01, "Plummer softening length (cosmological runs: comoving, "
                    "so the physical softening is a × eps)", lambda v: v >= 0, ">= 0"),
        "theta": _opt(float, 0.5, "opening angle (geometric criterion; with the relative "
                      "one: of the first force, which has no old acceleration yet)",
                      lambda v: 0 < v <= 1.2, "0 < theta <= 1.2"),
        "opening": _opt(str, "geometric", "cell opening criterion: geometric ((l / theta + "
                        "s)^2 < d^2) or relative (GADGET's: M l^2 / d^4 <= alpha |a_old|; "
                        "docs/physics.md)", choices=("geometric", "relative")),
        "alpha": _opt(float, 0.005, "relative opening criterion: tolerance on the force "
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
        "multipole": _opt(str, "monopole", "cell moments", choices=("monopole", "quadrupole")),
        "precise": _opt(bool, True, "direct method: hi + lo float32 coordinates"),
        "build": _opt(str, "device", "where the tree is built: device (OpenCL; the tree stays "
                      "there for the walk) or host (numpy, the reference)",
                      choices=("device", "host")),
        "remove_net_force": _opt(bool, True, "subtract the mass-weighted mean acceleration "
                                 "(the tree's spurious net force) so that total momentum is "
                                 "conserved"),
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
                         "sqrt(eps / |a|))", choices=("shared", "block")),
        "eta": _opt(float, 0.2, "block steps: accuracy of dt = eta sqrt(eps / |a|) (GADGET's "
                    "ErrTolIntAccuracy 0.025 is eta = 0.22)", lambda v: 0 < v <= 10,
                    "0 < eta <= 10"),
        "max_bin": _opt(int, 16, "block steps: the deepest bin (smallest step time.dt / "
                        "2^max_bin)", lambda v: 0 <= v <= 63, "0 <= max_bin <= 63"),

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
    },
    "output": {
        "dir": _opt(str, "out", "output folder (relative to the working directory)"),
        "snapshot_dt": _opt(float, 0.25, "time between snapshots (a whole number of steps); "
                            "the first and last states are always written",
                            lambda v: v > 0, "> 0"),
        "diag_every": _opt(int, 8, "steps between diagnostics reports", lambda v: v >= 1, ">= 1"),
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
}


class _Section:
    """Attribute access to one section's validated values."""

    def __init__(self, values: dict[str, Any]):
        self.__dict__.update(values)

    def __repr__(self) -> str:
        return f"{type(self).__name__}({self.__dict__})"


@dataclass(frozen=True)
class Settings:
    """Validated settings; ``settings.gravity.theta`` etc.  ``source`` is the config path."""

    values: dict[str, dict[str, Any]]
    source: str = ""

    def __getattr__(self, section: str) -> _Section:
        try:
            return _Section(self.values[section])
        except KeyError:
            raise AttributeError(section) from None

    def flat(self) -> dict[str, Any]:
        """``{"gravity.theta": 0.5, ...}``: every setting, defaults included."""
        return {f"{s}.{k}": v for s, opts in self.values.items() for k, v in opts.items()}

    def with_overrides(self, overrides: dict[str, Any]) -> "Settings":
        raw = {s: dict(opts) for s, opts in self.values.items()}
        for key, value in overrides.items():
            try:
                s, k = _split_key(key)
            except ConfigError as exc:
                raise ConfigError(f"{_set_text(key, value)}: {exc}") from None
            raw[s][k] = value
        try:
            return validate(raw, self.source)
        except ConfigError as exc:
            raise _located(exc, overrides, "") from None


def _set_text(key: str, value: Any) -> str:
    """How the user wrote an override: ``--set gravity.theta=-0.5``."""
    text = (str(value).lower() if isinstance(value, bool) else
            value if isinstance(value, str) else repr(value))
    return f"--set {key}={text}"


def _located(exc: ConfigError, overrides: dict[str, Any], source: str) -> ConfigError:
    """``exc`` prefixed with where the mistake is: the ``--set`` overrides it is about,
    else ``source`` (the config file or snapshot the other settings came from)."""
    named = [_set_text(k, overrides[k]) for k in exc.keys if k in overrides]
    where = ", ".join(named) or source
    return ConfigError(f"{where}: {exc}" if where else str(exc), exc.keys)


def _suggest(word: str, candidates) -> str:
    close = difflib.get_close_matches(word, list(candidates), n=1, cutoff=0.6)
    return f"; did you mean {close[0]!r}?" if close else ""


def _split_key(key: str) -> tuple[str, str]:
    section, _, name = key.partition(".")
    if not name or "." in name:
        raise ConfigError(f"setting {key!r} must look like section.name, e.g. gravity.theta")
    if section not in SCHEMA:
        raise ConfigError(f"unknown section {section!r}{_suggest(section, SCHEMA)}")
    if name not in SCHEMA[section]:
        raise ConfigError(f"unknown setting {key!r}"
                          f"{_suggest(key, [f'{section}.{n}' for n in SCHEMA[section]])}")
    return section, name


def _coerce(key: str, opt: Option, value: Any) -> Any:
    """Check the type of ``value`` (ints are accepted for floats, bools never for numbers;
    an option's ``convert`` may take other spellings first)."""
    if opt.convert is not None:
        value = opt.convert(value)
    ok = {bool: isinstance(value, bool),
          int: isinstance(value, int) and not isinstance(value, bool),
          float: isinstance(value, (int, float)) and not isinstance(value, bool),
          str: isinstance(value, str)}[opt.kind]
    if not ok:
        names = {bool: "true or false", int: "an integer", float: "a number", str: "a string"}
        raise ConfigError(f"{key} must be {names[opt.kind]}, got {value!r}", (key,))
    if opt.kind is float:
        value = float(value)
        if not math.isfinite(value):
            raise ConfigError(f"{key} must be finite, got {value!r}", (key,))
    if opt.choices and value not in opt.choices:
        raise ConfigError(f"{key} must be one of {', '.join(opt.choices)}; got {value!r}"
                          f"{_suggest(value, opt.choices)}", (key,))
    if opt.check is not None and not opt.check(value):
        raise ConfigError(f"{key} must be {opt.rule}, got {value!r}", (key,))
    return value


def _whole_steps(span: float, dt: float, at_least: int = 0) -> bool:
    """``span`` is a whole number (>= ``at_least``) of steps ``dt``."""
    ratio = span / dt
    if not math.isfinite(ratio) or ratio > 2**53:     # overflow, or steps beyond counting
        return False
    n = round(ratio)
    return n >= at_least and abs(n * dt - span) <= 1e-9 * max(span, dt)


def validate(raw: dict[str, Any], source: str = "") -> Settings:
    """Check a parsed TOML table against :data:`SCHEMA`; fill in defaults."""
    values: dict[str, dict[str, Any]] = {}
    for section in raw:
        if section not in SCHEMA:
            raise ConfigError(f"unknown section [{section}]{_suggest(section, SCHEMA)}")
        if not isinstance(raw[section], dict):
            raise ConfigError(f"[{section}] must be a table of settings, got {raw[section]!r}")
    for section, opts in SCHEMA.items():
        given = raw.get(section, {})
        for name in given:
            if name not in opts:
                raise ConfigError(f"unknown setting {section}.{name}{_suggest(name, opts)}",
                                  (f"{section}.{name}",))
        values[section] = {name: _coerce(f"{section}.{name}", opt, given[name])
                           if name in given else opt.default for name, opt in opts.items()}
    v = values
    if v["ics"]["kind"] == "file" and not v["ics"]["file"]:
        raise ConfigError("ics.kind = 'file' needs ics.file (the path of an HDF5 file)",
                          ("ics.kind", "ics.file"))
    cosmo = v["cosmology"]
    if v["ics"]["kind"] == "cosmo_sphere" and not cosmo["enabled"]:
        raise ConfigError("ics.kind = 'cosmo_sphere' needs cosmology.enabled = true",
                          ("ics.kind", "cosmology.enabled"))
    if v["ics"]["kind"] == "cosmo_sphere" and v["ics"]["radius"] > v["ics"]["box"] / 2:
        raise ConfigError(f"ics.radius ({v['ics']['radius']}) must be at most ics.box / 2 "
                          f"({v['ics']['box'] / 2})", ("ics.radius", "ics.box"))
    if cosmo["enabled"]:
        if cosmo["omega_b"] >= cosmo["omega_m"]:
            raise ConfigError(f"cosmology.omega_b ({cosmo['omega_b']}) must be smaller than "
                              f"cosmology.omega_m ({cosmo['omega_m']})",
                              ("cosmology.omega_b", "cosmology.omega_m"))
        if cosmo["z_end"] >= cosmo["z_start"]:
            raise ConfigError(f"cosmology.z_end ({cosmo['z_end']}) must be smaller than "
                              f"cosmology.z_start ({cosmo['z_start']})",
                              ("cosmology.z_end", "cosmology.z_start"))
        return _checked_rest(v, source)
    dt = v["time"]["dt"]
    if not _whole_steps(v["time"]["t_end"], dt):
        raise ConfigError(f"time.t_end ({v['time']['t_end']}) must be a whole number of steps "
                          f"of time.dt ({dt})", ("time.t_end", "time.dt"))
    snap_dt = v["output"]["snapshot_dt"]
    if snap_dt < dt * (1 - 1e-9):
        raise ConfigError(f"output.snapshot_dt ({snap_dt}) must be at least one step: it is "
                          f"smaller than time.dt ({dt})", ("output.snapshot_dt", "time.dt"))
    if not _whole_steps(snap_dt, dt, at_least=1):
        raise ConfigError(f"output.snapshot_dt ({snap_dt}) must be a whole number of steps "
                          f"of time.dt ({dt})", ("output.snapshot_dt", "time.dt"))
    return _checked_rest(v, source)


def _checked_rest(v: dict[str, dict[str, Any]], source: str) -> Settings:
    """The checks that hold for every run, then the settings."""
    if v["hybrid"]["r_in"] >= v["hybrid"]["r_out"]:
        raise ConfigError(f"hybrid.r_in ({v['hybrid']['r_in']}) must be smaller than "
                          f"hybrid.r_out ({v['hybrid']['r_out']})", ("hybrid.r_in", "hybrid.r_out"))
    if v["hybrid"]["enabled"] and v["gravity"]["method"] != "tree":
        raise ConfigError("hybrid.enabled = true needs gravity.method = 'tree'",
                          ("hybrid.enabled", "gravity.method"))
    if not v["output"]["dir"]:
        raise ConfigError("output.dir must not be empty", ("output.dir",))
    if v["hybrid"]["enabled"] and v["time"]["stepping"] == "block":
        raise ConfigError("time.stepping = 'block' does not take the hybrid tree "
                          "(hybrid.enabled = true): its nested steps already split the force",
                          ("time.stepping", "hybrid.enabled"))
    if v["hybrid"]["enabled"] and v["gravity"]["opening"] == "relative":
        raise ConfigError("gravity.opening = 'relative' does not take the hybrid tree "
                          "(hybrid.enabled = true) yet", ("gravity.opening", "hybrid.enabled"))
    if v["gravity"]["opening"] == "relative" and v["gravity"]["method"] != "tree":
        raise ConfigError("gravity.opening = 'relative' needs gravity.method = 'tree'",
                          ("gravity.opening", "gravity.method"))
    if (v["gravity"]["opening"] == "relative"
            and v["gravity"]["theta_min"] > v["gravity"]["theta_max"]):
        raise ConfigError(f"gravity.theta_min ({v['gravity']['theta_min']}) must be at most "
                          f"gravity.theta_max ({v['gravity']['theta_max']})",
                          ("gravity.theta_min", "gravity.theta_max"))
    if v["time"]["stepping"] == "block" and not v["gravity"]["eps"] > 0:
        raise ConfigError("time.stepping = 'block' needs gravity.eps > 0 (the step is "
                          "eta sqrt(eps / |a|))", ("time.stepping", "gravity.eps"))
    return Settings(v, source)


def parse_overrides(items: list[str]) -> dict[str, Any]:
    """``["gravity.theta=0.6", "output.dir=out2"]`` -> ``{"gravity.theta": 0.6, ...}``.

    Values are read as TOML values (numbers, true/false, "strings"); anything that is
    not valid TOML is taken as a bare string, so ``output.dir=out2`` works.
    """
    out: dict[str, Any] = {}
    for item in items:
        key, sep, text = item.partition("=")
        key = key.strip()
        if not sep or not key:
            raise ConfigError(f"--set needs section.name=value, got {item!r}")
        try:
            _split_key(key)
        except ConfigError as exc:
            raise ConfigError(f"--set {item.strip()}: {exc}") from None
        try:
            value = tomllib.loads(f"v = {text.strip()}")["v"]
        except tomllib.TOMLDecodeError:
            value = text.strip()
        out[key] = value
    return out


def load_config(path: str | Path, overrides: dict[str, Any] | None = None) -> Settings:
    """Read, merge ``overrides`` (flat ``section.name`` keys) and validate a TOML config."""
    path = Path(path)
    try:
        text = path.read_text(encoding="utf-8")
    except FileNotFoundError:
        raise ConfigError(f"config file {str(path)!r} not found") from None
    except (IsADirectoryError, PermissionError, UnicodeDecodeError) as exc:
        raise ConfigError(f"cannot read config file {str(path)!r}: {exc}") from None
    try:
        raw = tomllib.loads(text)
    except tomllib.TOMLDecodeError as exc:
        raise ConfigError(f"{path}: not valid TOML: {exc}") from None
    overrides = overrides or {}
    for key, value in overrides.items():
        try:
            s, k = _split_key(key)
        except ConfigError as exc:
            raise ConfigError(f"{_set_text(key, value)}: {exc}") from None
        section = raw.setdefault(s, {})
        if not isinstance(section, dict):
            raise ConfigError(f"{path}: [{s}] must be a table of settings")
        section[k] = value
    try:
        settings = validate(raw, str(path))
    except ConfigError as exc:
        raise _located(exc, overrides, str(path)) from None
    if settings.ics.kind == "file":
        # a relative IC path is relative to the config file, so configs can travel with data
        f = Path(settings.ics.file)
        if not f.is_absolute():
            settings.values["ics"]["file"] = str(path.parent / f)
    return settings


def settings_from_flat(flat: dict[str, Any], source: str = "") -> Settings:
    """Inverse of :meth:`Settings.flat` (e.g. from a snapshot's ``Parameters`` group).

    Keys this version does not know are errors, so a restart never silently drops one.
    """
    raw: dict[str, dict[str, Any]] = {}
    for key, value in flat.items():
        s, k = _split_key(key)
        raw.setdefault(s, {})[k] = value
    return validate(raw, source)


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


if __name__ == "__main__":
    print(markdown_table(), end="")
