"""GADGET-4-style HDF5 snapshots: one file per snapshot, written atomically.

Layout (what GADGET-4 writes for a non-cosmological run, so h5py, pynbody and yt read it):

- ``Header``: ``NumPart_ThisFile``, ``NumPart_Total``, ``NumPart_Total_HighWord``,
  ``MassTable``, ``Time``, ``Redshift`` (0), ``BoxSize`` (0: open boundaries),
  ``NumFilesPerSnapshot`` (1), ``Omega0``/``OmegaLambda`` (0), ``HubbleParam`` (1),
  ``Flag_DoublePrecision`` (1) and the other ``Flag_*`` (0).
- ``PartType1``: ``Coordinates``, ``Velocities``, ``Masses``, ``ParticleIDs``, and for run
  snapshots ``Potential`` and ``Acceleration`` (float64, internal units, G = 1).  Each
  dataset carries GADGET-4's ``a_scaling``/``h_scaling`` (0: physical quantities) and
  ``to_cgs`` attributes.
- ``Units``: ``UnitLength_in_cm``, ``UnitMass_in_g``, ``UnitVelocity_in_cm_per_s``,
  ``UnitTime_in_s``, ``GravitationalConstant`` (1 in these units).
- ``Parameters``: every validated setting as an attribute ``section.name``, and
  ``Time_GYR`` (the time in Gyr, where pynbody looks for it).
- ``RunState`` (hybridtree's own): ``Step``, ``SnapshotNumber``, ``InitialEnergy``; what a
  restart needs beyond the particles.
"""

from __future__ import annotations

import os
import re
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import h5py
import numpy as np

from ..units import GYR_S, Units

__all__ = ["SNAPSHOT_RE", "Particles", "Snapshot", "SnapshotError", "atomic_path", "read_snapshot",
           "read_particles", "write_snapshot", "snapshot_name"]

N_TYPES = 6
DM = 1                       # PartType1: collisionless particles
SNAPSHOT_RE = re.compile(r"^snapshot_(\d+)\.hdf5$")     # group 1: the snapshot number


class SnapshotError(ValueError):
    """A file that is missing, unreadable or not a usable snapshot (a user error)."""


@dataclass
class Particles:
    """Particle state in internal units (float64): positions, velocities, masses, IDs."""

    pos: np.ndarray
    vel: np.ndarray
    mass: np.ndarray
    ids: np.ndarray
    acc: np.ndarray | None = None
    pot: np.ndarray | None = None

    def __len__(self) -> int:
        return len(self.mass)


@dataclass
class Snapshot:
    particles: Particles
    time: float
    units: Units
    parameters: dict[str, Any] = field(default_factory=dict)
    run_state: dict[str, Any] = field(default_factory=dict)
    path: str = ""


def snapshot_name(number: int) -> str:
    return f"snapshot_{number:04d}.hdf5"


def atomic_path(final: Path) -> Path:
    """A temporary name beside ``final`` (same folder, so the rename is atomic)."""
    return final.with_name(f".{final.name}.{os.getpid()}.tmp")


def _dataset(group: h5py.Group, name: str, data: np.ndarray, to_cgs: float,
             description: str, length: int = 0, mass: int = 0, velocity: int = 0) -> None:
    """A dataset with the unit attributes of GADGET-4 (``*_scaling``, ``to_cgs``) and of
    the EAGLE convention (``VarDescription`` with U_L/U_M/U_V, ``CGSConversionFactor``)
    that pynbody reads."""
    d = group.create_dataset(name, data=data)
    d.attrs["a_scaling"] = 0.0
    d.attrs["h_scaling"] = 0.0
    d.attrs["length_scaling"] = float(length)
    d.attrs["mass_scaling"] = float(mass)
    d.attrs["velocity_scaling"] = float(velocity)
    d.attrs["to_cgs"] = float(to_cgs)
    d.attrs["VarDescription"] = description
    d.attrs["CGSConversionFactor"] = float(to_cgs)
    d.attrs["aexp-scale-exponent"] = 0.0
    d.attrs["h-scale-exponent"] = 0.0


def write_snapshot(path: str | Path, particles: Particles, time: float, units: Units,
                   parameters: dict[str, Any] | None = None,
                   run_state: dict[str, Any] | None = None, overwrite: bool = False) -> Path:
    """Write one snapshot atomically (temporary file + rename); return its path.

    Raises FileExistsError when ``path`` exists and ``overwrite`` is false.
    """
    path = Path(path)
    if path.exists() and not overwrite:
        raise FileExistsError(f"{path} exists (use --overwrite to replace it)")
    tmp = atomic_path(path)
    n = len(particles)
    counts = np.zeros(N_TYPES, np.uint64)
    counts[DM] = n
    try:
        with h5py.File(tmp, "w") as f:
            h = f.create_group("Header").attrs
            h["NumPart_ThisFile"] = counts
            h["NumPart_Total"] = counts & np.uint64(0xFFFFFFFF)
            h["NumPart_Total_HighWord"] = counts >> np.uint64(32)
            h["MassTable"] = np.zeros(N_TYPES)
            h["Time"] = float(time)
            h["Redshift"] = 0.0
            h["BoxSize"] = 0.0
            h["NumFilesPerSnapshot"] = 1
            h["Omega0"] = 0.0
            h["OmegaLambda"] = 0.0
            h["HubbleParam"] = 1.0
            h["Flag_DoublePrecision"] = 1
            for flag in ("Cooling", "Sfr", "Feedback", "StellarAge", "Metals", "Entropy_ICs"):
                h[f"Flag_{flag}"] = 0
            u = units
            g = f.create_group(f"PartType{DM}")
            _dataset(g, "Coordinates", particles.pos, u.length_cm, "Positions [U_L ]", length=1)
            _dataset(g, "Velocities", particles.vel, u.velocity_cm_per_s, "Velocities [U_V ]",
                     velocity=1)
            _dataset(g, "Masses", particles.mass, u.mass_g, "Masses [U_M ]", mass=1)
            _dataset(g, "ParticleIDs", particles.ids.astype(np.uint64), 1.0,
                     "Unique particle identifiers (dimensionless)")
            if particles.pot is not None:
                _dataset(g, "Potential", particles.pot, u.velocity_cm_per_s ** 2,
                         "Gravitational potential [U_V^2 ]", velocity=2)
            if particles.acc is not None:
                _dataset(g, "Acceleration", particles.acc, u.velocity_cm_per_s ** 2 / u.length_cm,
                         "Gravitational acceleration [U_V^2 /U_L ]", length=-1, velocity=2)
            ua = f.create_group("Units").attrs
            for k, v in units.attrs().items():
                ua[k] = v
            pa = f.create_group("Parameters").attrs
            for k, v in (parameters or {}).items():
                pa[k] = v
            # pynbody takes the age from here (else from a cosmology, with warnings)
            pa["Time_GYR"] = h["Time_GYR"] = float(time) * u.time_s / GYR_S
            if run_state is not None:
                ra = f.create_group("RunState").attrs
                for k, v in run_state.items():
                    ra[k] = v
        os.replace(tmp, path)
    except BaseException:
        tmp.unlink(missing_ok=True)
        raise
    return path


def _attr(value: Any) -> Any:
    """HDF5 attribute -> plain Python value."""
    if isinstance(value, bytes):
        return value.decode()
    if isinstance(value, np.ndarray):
        return value
    if isinstance(value, np.bool_):
        return bool(value)
    if isinstance(value, np.integer):
        return int(value)
    if isinstance(value, np.floating):
        return float(value)
    return value


def _open(path: Path) -> h5py.File:
    if not path.is_file():
        raise SnapshotError(f"{path}: no such file")
    try:
        return h5py.File(path, "r")
    except OSError as exc:
        raise SnapshotError(f"{path}: not a readable HDF5 file ({exc})") from None


def _file_units(f: h5py.File) -> tuple[Units, float, float] | None:
    """The file's units from ``Units`` or (GADGET-4) ``Parameters``: (length and mass,
    velocity unit in cm/s, time unit in s), the last two as the file states them
    (else derived with G = 1); None if absent."""
    for group in ("Units", "Parameters"):
        if group in f and "UnitLength_in_cm" in f[group].attrs and "UnitMass_in_g" in f[group].attrs:
            a = f[group].attrs
            u = Units(float(a["UnitLength_in_cm"]), float(a["UnitMass_in_g"]))
            v = float(a.get("UnitVelocity_in_cm_per_s", u.velocity_cm_per_s))
            return u, v, float(a.get("UnitTime_in_s", u.length_cm / v))
    return None


def read_particles(path: str | Path, types: str = "all", units: Units | None = None
                   ) -> tuple[Particles, float, Units | None]:
    """Particles of a GADGET-style HDF5 file: ``types`` "all" (every ``PartTypeN`` in
    order, flattened) or one group name.  Masses from ``Masses`` or the ``MassTable``.

    With ``units`` given and unit attributes in the file (``Units`` or ``Parameters``
    group), positions, velocities and masses are converted to ``units``; a file without
    unit attributes is taken to be in ``units`` already.  The file's velocity unit is
    taken as sqrt(G M/L) only when it does not say: GADGET's own
    ``UnitVelocity_in_cm_per_s`` is used when present.  Returns (particles, time, file units).
    """
    path = Path(path)
    with _open(path) as f:
        names = [f"PartType{t}" for t in range(N_TYPES) if f"PartType{t}" in f]
        if types != "all":
            if types not in f:
                raise SnapshotError(f"{path}: no group {types!r} (has {', '.join(names) or 'none'})")
            names = [types]
        if not names:
            raise SnapshotError(f"{path}: no PartType groups: not a GADGET-style snapshot")
        header = f["Header"].attrs if "Header" in f else {}
        table = np.asarray(header.get("MassTable", np.zeros(N_TYPES)), np.float64)
        parts = []
        for name in names:
            g = f[name]
            if "Coordinates" not in g:
                raise SnapshotError(f"{path}: {name} has no Coordinates")
            pos = np.asarray(g["Coordinates"][...], np.float64)
            if pos.ndim != 2 or pos.shape[1] != 3:
                raise SnapshotError(f"{path}: {name}/Coordinates has shape {pos.shape}, not (N, 3)")
            n = len(pos)
            vel = (np.asarray(g["Velocities"][...], np.float64) if "Velocities" in g
                   else np.zeros((n, 3)))
            if "Masses" in g:
                mass = np.asarray(g["Masses"][...], np.float64)
            else:
                t = int(name[len("PartType"):])
                if t >= len(table) or table[t] <= 0:
                    raise SnapshotError(f"{path}: {name} has no Masses and no MassTable entry")
                mass = np.full(n, table[t])
            ids = (np.asarray(g["ParticleIDs"][...], np.uint64) if "ParticleIDs" in g
                   else np.zeros(n, np.uint64))
            if vel.shape != (n, 3) or mass.shape != (n,) or ids.shape != (n,):
                raise SnapshotError(f"{path}: {name} datasets disagree in length")
            parts.append((pos, vel, mass, ids))
        time = float(header.get("Time", 0.0))
        stated = _file_units(f)
    file_units = stated[0] if stated else None
    pos, vel, mass, ids = (np.concatenate([p[i] for p in parts]) for i in range(4))
    if len(np.unique(ids)) != len(ids):          # missing or repeated IDs: number them
        ids = np.arange(1, len(ids) + 1, dtype=np.uint64)
    if units is not None and stated is not None and file_units != units:
        _, v_file, t_file = stated
        pos = pos * (file_units.length_cm / units.length_cm)
        vel = vel * (v_file / units.velocity_cm_per_s)
        mass = mass * (file_units.mass_g / units.mass_g)
        time = time * (t_file / units.time_s)
    return Particles(pos, vel, mass, ids), time, file_units


def read_snapshot(path: str | Path) -> Snapshot:
    """A snapshot written by :func:`write_snapshot` (for restarts and ``hybridtree info``)."""
    path = Path(path)
    particles, time, units = read_particles(path, types="PartType1")
    with _open(path) as f:
        g = f["PartType1"]
        if "Acceleration" in g:
            particles.acc = np.asarray(g["Acceleration"][...], np.float64)
        if "Potential" in g:
            particles.pot = np.asarray(g["Potential"][...], np.float64)
        params = {k: _attr(v) for k, v in f["Parameters"].attrs.items()} if "Parameters" in f else {}
        state = {k: _attr(v) for k, v in f["RunState"].attrs.items()} if "RunState" in f else {}
        particles.ids = np.asarray(g["ParticleIDs"][...], np.uint64) if "ParticleIDs" in g else particles.ids
    if units is None:
        raise SnapshotError(f"{path}: no Units group")
    return Snapshot(particles, time, units, params, state, str(path))
