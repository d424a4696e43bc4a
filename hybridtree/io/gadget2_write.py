"""hybridtree's HDF5 snapshots again as GADGET-2 binary files (``output.gadget2``), for
tools that read only those: one file per snapshot set, format 2 by default, in GADGET's
default units (kpc, 10^10 Msun, km/s; its time unit kpc / (km/s) = 0.978 Gyr), which is
what such tools, and hybridtree's own reader, assume of a file that cannot state units.

An isolated run's file holds physical numbers and ``time`` in that time unit (BoxSize 0,
Omega0 0, HubbleParam 1).  A periodic box's holds GADGET's cosmological numbers: comoving
x in kpc/h, u = v_pec / sqrt(a) in km/s, m in 10^10 Msun/h, ``time`` = a, with BoxSize, the
Ω's and h.  Each type keeps its own block of rows (PartType0 .. 5 in order).
"""

from __future__ import annotations

from pathlib import Path

import h5py
import numpy as np

from ..config.units import Units
from .gadget_binary import write_gadget2_snapshot, write_set
from .gadget_defaults import GADGET_DEFAULT_UNITS
from .hdf5_files import N_TYPES, SnapshotError, snapshot_files

__all__ = ["hdf5_to_gadget2"]


def hdf5_to_gadget2(snapshot: str | Path, out: str | Path, fmt: int = 2,
                    double: bool = True, endian: str = "<") -> Path:
    """Write the hybridtree snapshot set ``snapshot`` (one file or every part) as one
    GADGET-2 binary file ``out`` (the module docstring says what it holds); returns
    ``out``.  ``fmt``: 1 or 2; ``double``: float64 positions, velocities and masses (else
    float32); ``endian``: "<" or ">".  SnapshotError for a file without hybridtree's
    ``Units`` group or a cosmological run that is not a periodic box (its physical
    coordinates about a centre have no GADGET-2 equivalent)."""
    files = snapshot_files(snapshot)
    cols: dict[str, list[np.ndarray]] = {k: [] for k in ("pos", "vel", "mass", "ids", "types")}
    with h5py.File(files[0], "r") as f:
        if "Units" not in f:
            raise SnapshotError(f"{files[0]}: no Units group: not a hybridtree snapshot")
        units = {k: float(v) for k, v in f["Units"].attrs.items()}
        header = dict(f["Header"].attrs)
    box = float(header.get("BoxSize", 0.0))
    comoving = float(header.get("Omega0", 0.0)) > 0
    if comoving and not box > 0:
        raise SnapshotError(f"{files[0]}: a cosmological sphere: GADGET-2's binary format "
                            f"holds periodic boxes and isolated systems only")
    for q in files:
        with h5py.File(q, "r") as f:
            for t in range(N_TYPES):
                g = f.get(f"PartType{t}")
                if g is None or not len(g["ParticleIDs"]):
                    continue
                cols["pos"].append(g["Coordinates"][...])
                cols["vel"].append(g["Velocities"][...])
                cols["mass"].append(g["Masses"][...])
                cols["ids"].append(g["ParticleIDs"][...])
                cols["types"].append(np.full(len(g["ParticleIDs"]), t, np.int8))
    pos, vel, mass, ids, types = (np.concatenate(cols[k]) if cols[k] else np.zeros(0)
                                  for k in ("pos", "vel", "mass", "ids", "types"))
    pos, vel = pos.reshape(-1, 3), vel.reshape(-1, 3)
    out = Path(out)
    if not comoving:            # physical numbers in the run's units, time included
        run = Units(units["UnitLength_in_cm"], units["UnitMass_in_g"])
        write_gadget2_snapshot(out, pos, vel, mass, ids.astype(np.uint64), float(header["Time"]),
                               units=run, types=types.astype(np.int8), fmt=fmt, id_bytes=8,
                               double=double, endian=endian)
        return out
    # a box's HDF5 numbers are GADGET's convention already (x h, p / a^1.5, m h,
    # BoxSize = L h): only the units change
    to_len = units["UnitLength_in_cm"] / GADGET_DEFAULT_UNITS["UnitLength_in_cm"]
    to_vel = units["UnitVelocity_in_cm_per_s"] / GADGET_DEFAULT_UNITS["UnitVelocity_in_cm_per_s"]
    to_mass = units["UnitMass_in_g"] / GADGET_DEFAULT_UNITS["UnitMass_in_g"]
    real = np.dtype(endian + ("f8" if double else "f4"))
    write_set(out, (pos * to_len).astype(real), (vel * to_vel).astype(real), mass * to_mass,
              ids.astype(np.uint64), types.astype(np.int8), fmt, 1, 8, double, endian,
              time=float(header["Time"]), redshift=float(header["Redshift"]),
              box=box * to_len, omega_m=float(header["Omega0"]),
              omega_lambda=float(header["OmegaLambda"]), h=float(header["HubbleParam"]))
    return out
