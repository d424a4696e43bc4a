"""The rules that relate settings to each other, in one place: what one setting needs of
another (``hybrid.enabled`` needs ``gravity.method = 'tree'``), what they cannot take
together (block steps and the hybrid tree), and the steps the times must be whole numbers
of.  :func:`check_settings` runs them on every validation
(:func:`hybridtree.config.settings.validate`); :func:`process_refusal` holds the rules
that depend on the number of processes too, which a run checks once it knows it.
Messages are what users see (a :class:`ConfigError` with the settings it is about).
"""

from __future__ import annotations

import math
from typing import Any

from .schema import ConfigError

__all__ = ["check_settings", "process_refusal"]

Values = dict[str, dict[str, Any]]


def _whole_steps(span: float, dt: float, at_least: int = 0) -> bool:
    """``span`` is a whole number (>= ``at_least``) of steps ``dt``."""
    ratio = span / dt
    if not math.isfinite(ratio) or ratio > 2**53:     # overflow, or steps beyond counting
        return False
    n = round(ratio)
    return n >= at_least and abs(n * dt - span) <= 1e-9 * max(span, dt)


def check_settings(v: Values) -> None:
    """ConfigError for the first rule the validated values ``v`` (section -> name ->
    value) break."""
    if v["ics"]["kind"] in ("file", "box_file") and not v["ics"]["file"]:
        raise ConfigError(f"ics.kind = '{v['ics']['kind']}' needs ics.file (the path of the "
                          f"initial conditions)", ("ics.kind", "ics.file"))
    cosmo = v["cosmology"]
    if v["ics"]["kind"] == "cosmo_sphere" and not cosmo["enabled"]:
        raise ConfigError("ics.kind = 'cosmo_sphere' needs cosmology.enabled = true",
                          ("ics.kind", "cosmology.enabled"))
    if v["ics"]["kind"] in ("cosmo_box", "box_file"):
        _periodic_box(v)
    elif cosmo["short_steps"] > 1:
        raise ConfigError("cosmology.short_steps > 1 is the long/short time split of a "
                          "periodic box's TreePM forces (ics.kind = 'cosmo_box' or "
                          "'box_file')", ("cosmology.short_steps", "ics.kind"))
    if (v["output"]["gadget2"] and v["cosmology"]["enabled"]
            and v["ics"]["kind"] not in ("cosmo_box", "box_file")):
        raise ConfigError("output.gadget2 = true: GADGET-2's binary format holds periodic boxes "
                          "and isolated systems, not a cosmological sphere (its HDF5 snapshots "
                          "are GADGET-4 files)", ("output.gadget2", "ics.kind"))
    if v["output"]["power_spectrum"] and v["ics"]["kind"] not in ("cosmo_box", "box_file"):
        raise ConfigError("output.power_spectrum = true needs a periodic box (ics.kind = "
                          "'cosmo_box' or 'box_file')", ("output.power_spectrum", "ics.kind"))
    if v["output"]["halos"] and not v["cosmology"]["enabled"]:
        raise ConfigError("output.halos = true needs a cosmological run (cosmology.enabled = "
                          "true): its linking length is b times the mean separation",
                          ("output.halos", "cosmology.enabled"))
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
        _every_run(v)
        return
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
    _every_run(v)


def _periodic_box(v: Values) -> None:
    """What a periodic box (TreePM, comoving integration) does not take yet."""
    if not v["cosmology"]["enabled"]:
        raise ConfigError(f"ics.kind = '{v['ics']['kind']}' needs cosmology.enabled = true",
                          ("ics.kind", "cosmology.enabled"))
    refused = (("gravity.method", v["gravity"]["method"] != "tree", "'direct'"),
               ("gravity.multipole", v["gravity"]["multipole"] == "quadrupole", "'quadrupole'"),
               ("hybrid.enabled", v["hybrid"]["enabled"], "true"))
    for key, bad, value in refused:
        if bad:
            raise ConfigError(f"a periodic box (ics.kind = '{v['ics']['kind']}') does not take "
                              f"{key} = "
                              f"{value} yet: its forces are TreePM with monopole cells "
                              f"(docs/cosmology.md)", ("ics.kind", key))
    if v["time"]["stepping"] == "block" and v["cosmology"]["short_steps"] > 1:
        raise ConfigError("time.stepping = 'block' chooses a periodic box's short-range steps "
                          "itself: leave cosmology.short_steps at 1",
                          ("time.stepping", "cosmology.short_steps"))


def _every_run(v: dict[str, dict[str, Any]]) -> None:
    """The rules that hold for every run, cosmological or not."""
    g = v["gravity"]
    if g["softening"] == "spline" and (not g["eps"] > 0 or g["multipole"] == "quadrupole"):
        raise ConfigError("gravity.softening = 'spline' needs gravity.eps > 0 and monopole "
                          "cells (gravity.multipole = 'monopole' or 'auto')",
                          ("gravity.softening", "gravity.eps", "gravity.multipole"))
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
    if g["eps_types"].strip() and not g["eps"] > 0:
        raise ConfigError("gravity.eps_types needs gravity.eps > 0 (the types' softenings "
                          "scale with it)", ("gravity.eps_types", "gravity.eps"))
    if g["eps_types"].strip() and g["build"] == "host":
        raise ConfigError("gravity.eps_types needs gravity.build = 'device' (the host's "
                          "tree carries one softening)", ("gravity.eps_types", "gravity.build"))
    if v["time"]["stepping"] == "block" and not v["gravity"]["eps"] > 0:
        raise ConfigError("time.stepping = 'block' needs gravity.eps > 0 (the step is "
                          "eta sqrt(eps / |a|))", ("time.stepping", "gravity.eps"))


def process_refusal(v: Values, size: int, overlap_rule: bool = True) -> str | None:
    """Why settings ``v`` cannot run on ``size`` processes (None: they can).  ``overlap_rule``
    (False: not asked yet, the run knows the gravity settings later)."""
    if size <= 1:
        return None
    if v["ics"]["kind"] in ("cosmo_box", "box_file") and v["parallel"]["overlap"]:
        return (f"a periodic box (ics.kind = '{v['ics']['kind']}') does not take "
                "parallel.overlap = true")
    if v["ics"]["kind"] in ("cosmo_box", "box_file") and v["time"]["stepping"] == "block":
        return (f"a periodic box (ics.kind = '{v['ics']['kind']}') with time.stepping = "
                "'block' runs on one process for now")
    g = v["gravity"]
    if g["method"] != "tree":
        return "gravity.method = 'direct' runs as one process; use the tree method under mpiexec"
    if g["eps_types"].strip():
        return ("gravity.eps_types (a softening per type) runs as one process for now: the "
                "LET that processes exchange carries one softening")
    grid = v["parallel"]["grid"]
    domains = math.prod(int(n) for n in grid.split("x")) if grid else None
    if domains is not None and domains != size:
        return f"parallel.grid = {grid!r} has {domains} domains but {size} processes run"
    if (overlap_rule and (v["time"]["stepping"] == "block" or g["opening"] == "relative")
            and v["parallel"]["overlap"]):
        return ("time.stepping = 'block' and gravity.opening = 'relative' do not take "
                "parallel.overlap = true")
    return None
