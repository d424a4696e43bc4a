"""``hybridtree info SNAPSHOT``: a human-readable summary of a GADGET-style snapshot; and
the ``hybridtree devices`` listing (:func:`device_listing`)."""

from __future__ import annotations

from collections.abc import Mapping
from pathlib import Path

import h5py
import numpy as np

from .diagnostics import energies, lagrangian_radii
from ..device.choice import FORCE_BYTES_PER_PARTICLE, STATE_BYTES_PER_PARTICLE, usable
from ..device.runtime import DeviceInfo
from ..device.probe import Probe
from ..io.gadget2_read import binary_files, binary_header
from ..io.gadget_binary import read_binary_part
from ..io.snapshot import (SnapshotError, latest_run_point, read_particles, resolve_snapshot,
                           snapshot_files)
from ..config.units import GYR_S, Units
from ..cosmo.background import Cosmology
from .figure_units import SnapshotCosmology, snapshot_cosmology
from ..io.gadget_units import hubble_rate

__all__ = ["describe", "device_listing"]


def describe(path: str | Path) -> str:
    """Counts, time, units, mass, centre of mass, radii, energies (if potentials are
    stored) and the run's settings, one item per line (internal units unless stated).

    ``path``: a snapshot file, any part of a multi-file set (the whole set is described),
    the stem of either (``out/snapshot_0002``), or a run folder (its newest state, the
    one ``hybridtree run --restart FOLDER`` would continue)."""
    binary = None if Path(path).is_dir() else binary_files(path)
    if binary is not None:
        return _binary_summary(binary)
    path = resolve_snapshot(_newest_in(path) if Path(path).is_dir() else path)
    files = snapshot_files(path)        # every part of a multi-file set, checked complete
    p, t, units = read_particles(path, "all")
    lines = [f"{path}"]
    if len(files) > 1:
        lines.append(f"files: {len(files)} parts, {files[0].name} ... {files[-1].name}")
    # read in the same order as read_particles: file by file, PartType by PartType
    counts: dict[str, int] = {}
    pots: list[np.ndarray] | None = []
    params: dict = {}
    state: dict = {}
    header: dict = {}
    for i, q in enumerate(files):
        with h5py.File(q, "r") as f:
            for name in sorted(f):
                if name.startswith("PartType") and "Coordinates" in f[name]:
                    counts[name] = counts.get(name, 0) + len(f[name]["Coordinates"])
                    if pots is not None and "Potential" in f[name]:
                        pots.append(np.asarray(f[name]["Potential"][...], np.float64))
                    else:
                        pots = None
            if i == 0:
                header = dict(f["Header"].attrs) if "Header" in f else {}
                params = dict(f["Parameters"].attrs) if "Parameters" in f else {}
                state = dict(f["RunState"].attrs) if "RunState" in f else {}
    pot = None
    if pots and list(counts) == ["PartType1"]:
        pot = np.concatenate(pots)
        if pot.shape != (len(p),):
            pot = None
    lines.append("particles: " + ", ".join(f"{n} {name}" for name, n in counts.items())
                 + f" (total {len(p)})")
    lines += _particle_lines(path, p, t, units, header, params, state, pot,
                             _cosmology(path, units))
    settings = {k: v for k, v in params.items() if "." in k}
    sections = ("ics", "gravity", "time") + (("cosmology",) if _flag(params.get(
        "cosmology.enabled", False)) else ())
    if settings:
        lines.append("settings: " + ", ".join(
            f"{k}={v.decode() if isinstance(v, bytes) else v}" for k, v in settings.items()
            if k.split(".")[0] in sections))
    return "\n".join(lines)


def _flag(value) -> bool:
    """A boolean attribute as stored (numpy bool, or text from another writer)."""
    if isinstance(value, bytes):
        value = value.decode()
    return value.strip().lower() == "true" if isinstance(value, str) else bool(value)


def _cosmology(path: Path, units) -> tuple[SnapshotCosmology, float] | None:
    """A cosmological snapshot's :class:`SnapshotCosmology` (a, z, h, Ω's) and the Λ term's
    λ = Ω_Λ H0² of its run (internal units; 0 without Λ or where its units are unknown),
    the one its diagnostics add to the potential energy
    (:func:`hybridtree.state.quantities.with_lambda_potential`); None for other
    snapshots."""
    try:
        cosmo = snapshot_cosmology(path)
    except SnapshotError:           # no h, a or z: described as an ordinary snapshot
        return None
    if cosmo is None:
        return None
    lam = 0.0
    if cosmo.omega_lambda > 0 and cosmo.omega0 > 0 and units is not None:
        # λ needs H0 and Ω_Λ alone: Ω_b, σ8 and n_s are placeholders that pass the checks
        lam = Cosmology(omega_m=cosmo.omega0, omega_l=cosmo.omega_lambda,
                        omega_b=0.5 * cosmo.omega0, h=cosmo.h, sigma8=0.8, n_s=1.0,
                        units=Units(units.length_cm, units.mass_g)).lambda_term
    return cosmo, lam


def _periodic_lines(p, header: dict, params: dict, m: float, time_s: float) -> list[str]:
    """A periodic box's summary: its side, the mass, and the peculiar velocities (the
    readers' velocities less the Hubble flow H(a) r about the origin they add); a centre
    of mass, Lagrangian radii and energies mean nothing there."""
    a, box = float(header["Time"]), float(header["BoxSize"])

    def number(key: str, default: float) -> float:
        return float(header.get(key, params.get(key, default)))

    h = number("HubbleParam", 1.0) or 1.0
    hubble = hubble_rate(a, h, number("Omega0", 0.0), number("OmegaLambda", 0.0), time_s)
    pec = p.vel - hubble * p.pos
    side = box * a / h                  # physical side in the readers' length unit
    rms = float(np.sqrt((p.mass @ (pec * pec).sum(axis=1)) / m))
    return [f"periodic box: BoxSize {box:.10g} (comoving, file units/h), physical side "
            f"{side:.6g} at a = {a:.6g}, z = {1 / a - 1:.6g}",
            f"total mass: {m:.10g}",
            f"peculiar velocity: rms {rms:.6g}"]


def _particle_lines(path: Path, p, t: float, units, header: dict, params: dict, state: dict,
                    pot, cosmo: tuple[SnapshotCosmology, float] | None = None) -> list[str]:
    """What every snapshot's summary says after its counts: time and units, the run
    state, mass with centre and radii (or a box's side and peculiar velocities), and
    each type's share.  ``cosmo``: a cosmological snapshot's cosmology and Λ term
    (:func:`_cosmology`): an isolated one's a and z, and its energies as its run's
    diagnostics have them."""
    tline = f"time: {t:.6g}"
    if units is not None:
        lines = [tline + f" ({t * units.time_s / GYR_S:.6g} Gyr)",
                 f"units: length {units.length_cm:.6g} cm, mass {units.mass_g:.6g} g, "
                 f"velocity {units.velocity_cm_per_s:.6g} cm/s, time {units.time_s:.6g} s "
                 f"({getattr(units, 'note', 'G = 1')})"]     # note: a foreign file's
    else:
        lines = [tline, "units: none stored"]
    if "Step" in state:
        lines.append(f"run state: step {int(state['Step'])}, snapshot "
                     f"{int(state['SnapshotNumber'])}, initial energy {float(state['InitialEnergy']):.10g}")
    m = p.mass.sum()
    if m <= 0:
        raise SnapshotError(f"{path}: total mass is {m}")
    periodic = (float(header.get("BoxSize", 0.0)) > 0 and float(header.get("Time", 0.0)) > 0
                and units is not None)
    if periodic:
        lines += _periodic_lines(p, header, params, m, units.time_s)
    else:
        lam = 0.0
        if cosmo is not None:
            c, lam = cosmo
            lines.append(f"cosmology: a = {c.a:.6g}, z = {c.redshift:.6g} (Omega_m {c.omega0:g}, "
                         f"Omega_Lambda {c.omega_lambda:g}, h {c.h:g})")
        lines += _isolated_lines(p, m, pot, lam)
    return lines + _type_lines(p, periodic)


def _binary_summary(files: list[Path]) -> str:
    """A GADGET-2 binary set: its format and files, counts per type, then what an HDF5
    file's summary says (:func:`_particle_lines`)."""
    first = read_binary_part(files[0])          # in full: the format line names its blocks
    p, t, units = read_particles(files[0], "all")
    lines = [f"{files[0]}", f"format: {first.source}"]
    if len(files) > 1:
        lines.append(f"files: {len(files)} parts, {files[0].name} ... {files[-1].name}")
    counts = np.bincount(p.types, minlength=6)
    lines.append("particles: " + ", ".join(f"{n} PartType{k}" for k, n in enumerate(counts) if n)
                 + f" (total {len(p)})")
    return "\n".join(lines + _particle_lines(files[0], p, t, units, binary_header(first), {},
                                             {}, None))


def _type_lines(p, periodic: bool) -> list[str]:
    """Per type, where there are several: count, mass and (isolated systems) Lagrangian
    radii about the whole system's centre of mass."""
    types = np.unique(p.types)
    if len(types) < 2:
        return []
    com = p.mass @ p.pos / p.mass.sum()
    lines = []
    for t in types:
        rows = p.types == t
        line = f"PartType{t}: {int(rows.sum())} particles, mass {p.mass[rows].sum():.10g}"
        if not periodic and p.mass[rows].sum() > 0:
            r = lagrangian_radii(p.pos[rows], p.mass[rows], centre=com)
            line += f", Lagrangian radii 10/50/90 %: {r[0]:.5g} / {r[1]:.5g} / {r[2]:.5g}"
        lines.append(line)
    return lines


def _isolated_lines(p, m: float, pot, lam: float = 0.0) -> list[str]:
    """Mass, centre of mass, Lagrangian radii and energies; ``lam``: the Λ term's λ of a
    cosmological sphere, whose potential energy -½ λ Σ m r² (r from the origin, the
    centre of the Hubble flow) is part of the potential, as in the run's diagnostics."""
    lines = []
    com = p.mass @ p.pos / m
    vcom = p.mass @ p.vel / m
    lines.append(f"total mass: {m:.10g}")
    lines.append(f"centre of mass: {np.array2string(com, precision=4)}, "
                 f"velocity {np.array2string(vcom, precision=4)}")
    r10, r50, r90 = lagrangian_radii(p.pos, p.mass)
    lines.append(f"Lagrangian radii 10/50/90 %: {r10:.5g} / {r50:.5g} / {r90:.5g}")
    kin, w = energies(p.vel, p.mass, pot)
    if pot is not None and lam:
        extra = -0.5 * lam * float(p.mass @ np.einsum("ij,ij->i", p.pos, p.pos))
        u = w + extra
        lines.append(f"energy: kinetic {kin:.10g}, potential {u:.10g} (gravity {w:.10g}, "
                     f"Lambda term {extra:.10g}), total {kin + u:.10g}, 2K/|W| "
                     f"{2 * kin / abs(u):.5f} (W: the potential with the Lambda term, as in "
                     f"the run's diagnostics)")
    elif pot is not None:
        lines.append(f"energy: kinetic {kin:.10g}, potential {w:.10g}, total {kin + w:.10g}, "
                     f"2K/|W| {2 * kin / abs(w):.5f}")
    else:
        lines.append(f"energy: kinetic {kin:.10g} (no potentials stored)")
    return lines


def _newest_in(folder: str | Path) -> Path:
    """A run folder's newest snapshot or restart point; SnapshotError if it has none."""
    newest = latest_run_point(folder)
    if newest is None:
        raise SnapshotError(f"no snapshot in folder {folder} (a run folder holds "
                            f"snapshot_*.hdf5)")
    return newest


def device_listing(devices: list[DeviceInfo], chosen: DeviceInfo | None,
                   need_bytes: int = 0, probes: Mapping[DeviceInfo, Probe] | None = None,
                   largest: Mapping[DeviceInfo, tuple[int, int]] | None = None) -> str:
    """The ``hybridtree devices`` listing: per device a line with ``*`` where ``chosen``,
    its label and OpenCL version, and an indented line with its memory (GiB), the largest
    run it holds (particles, state on the device), double precision, work-group and local
    memory limits, what the device probe found (``probes``: unusable and why, or how it
    computes 1/sqrt), and why the automatic choice passes it over (a simulator, less
    memory than ``need_bytes``, or a failed probe), where it does.  ``largest``: per device
    the largest N of a Plummer run and of a periodic box with the default settings
    (:func:`hybridtree.run.plan.largest_n`); without it, the device's memory over a flat
    351 bytes per particle."""
    lines = []
    per = FORCE_BYTES_PER_PARTICLE + STATE_BYTES_PER_PARTICLE
    for d in devices:
        mark = "*" if d == chosen else " "
        driver = f", driver {d.driver}" if d.driver else ""
        lines.append(f"{mark} {d.label}  [{d.version}{driver}]")
        facts = []
        if d.global_mem_size and largest is not None and d in largest:
            plummer, box = largest[d]
            facts.append(f"{d.global_mem_size / 2**30:.3g} GiB (runs up to about "
                         f"{plummer:.2g} particles: a Plummer run with the default "
                         f"settings; a periodic box {box:.2g})")
        elif d.global_mem_size:
            facts.append(f"{d.global_mem_size / 2**30:.3g} GiB (runs up to about "
                         f"{d.global_mem_size / per:.2g} particles)")
        facts.append("double precision" if d.fp64 else "no double precision (state on the host)")
        if d.max_work_group_size:
            facts.append(f"work-groups up to {d.max_work_group_size}")
        if d.local_mem_size:
            facts.append(f"local memory {d.local_mem_size // 1024} KiB")
        found = (probes or {}).get(d)
        why = usable(d, need_bytes)
        if found is not None and found.ok:
            facts.append(found.describe())
        elif found is not None:
            why = why or f"cannot build kernels: {found.reason}"
        if why:
            facts.append(f"not chosen automatically: {why}")
        lines.append("      " + ", ".join(facts))
    return "\n".join(lines)
