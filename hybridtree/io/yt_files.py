"""What hybridtree's yt support needs to know of a file, without yt: whether hybridtree
wrote it, its units and box, a bounding box for open boundaries, the physical units of
its own fields.  Below both :mod:`hybridtree.io.yt` (:func:`load_yt`) and the yt frontend
(:mod:`hybridtree.io.yt_frontend`), so that neither imports the other's caller."""

from __future__ import annotations

import logging
from contextlib import contextmanager
from pathlib import Path
from types import MappingProxyType
from typing import Iterator

import h5py
import numpy as np

from .gadget_units import file_units
from .hdf5_files import N_TYPES, check_extra_types, open_file
from .snapshot import SnapshotError

__all__ = ["bounding_box", "group_box", "is_hybridtree_file", "physical_field_units",
           "quiet_about_periodicity", "unit_base_and_box"]

#: rows of Coordinates read at a time while finding the bounding box
CHUNK = 1 << 20
#: the bounding box's half-width over the particles' farthest distance from their centre
#: of mass: particles exactly on its faces would be lost
MARGIN = 1.01


def is_hybridtree_file(path: str | Path, kind: str) -> bool:
    """Whether ``path`` is a file hybridtree wrote: ``kind`` "snapshot" (a ``Header``,
    particles, and a ``Units`` group with hybridtree's ``G_in_cgs``) or "catalogue" (a FOF
    catalogue: ``Group``, ``IDs/ID`` and ``Header/LinkingLength``).  False for anything
    unreadable: yt asks every frontend about every file."""
    try:
        with h5py.File(path, "r") as f:
            if not isinstance(f.get("Header"), h5py.Group):
                return False
            if kind == "catalogue":
                return ("Group" in f and "IDs/ID" in f
                        and "LinkingLength" in f["Header"].attrs)
            return ("Group" not in f and isinstance(f.get("Units"), h5py.Group)
                    and "G_in_cgs" in f["Units"].attrs
                    and any(f"PartType{t}" in f for t in range(N_TYPES)))
    except Exception:       # not HDF5, unreadable, a folder: not ours
        return False


def unit_base_and_box(path: Path, particles: bool = True) -> tuple[dict[str, float] | None,
                                                                    float]:
    """yt's ``unit_base`` from the file's units (cgs; None if it states none) and its
    ``BoxSize`` (internal units; 0 for open boundaries).  SnapshotError if ``path`` has no
    GADGET ``Header`` or (``particles``: a snapshot) no particles."""
    with open_file(path) as f:
        if not isinstance(f.get("Header"), h5py.Group):
            raise SnapshotError(f"{path}: no Header group: not a GADGET-style snapshot")
        if particles and not any(f"PartType{t}" in f for t in range(N_TYPES)):
            raise SnapshotError(f"{path}: no PartType groups: not a GADGET-style snapshot")
        if particles:
            check_extra_types(path, f)      # yt's GADGET frontend knows PartType0 .. 5 only
        stated = file_units(f)
        box = float(np.asarray(f["Header"].attrs.get("BoxSize", 0.0)).reshape(-1)[0])
    if stated is None:
        return None, box
    units, velocity_cm_per_s, _ = stated
    return {"UnitLength_in_cm": units.length_cm, "UnitMass_in_g": units.mass_g,
            "UnitVelocity_in_cm_per_s": velocity_cm_per_s}, box


def bounding_box(files: list[Path]) -> np.ndarray:
    """[[x0, x1], [y0, y1], [z0, z1]] (internal length units): the cube centred on the
    centre of mass whose half-width is :data:`MARGIN` times the largest distance of a
    particle from it along an axis."""
    lo, hi, mass, moment = np.full(3, np.inf), np.full(3, -np.inf), 0.0, np.zeros(3)
    for q in files:
        for x, m in _coordinates_and_masses(q):
            lo, hi = np.minimum(lo, x.min(axis=0)), np.maximum(hi, x.max(axis=0))
            mass, moment = mass + m.sum(), moment + m @ x
    if not np.all(np.isfinite(lo)):
        raise SnapshotError(f"{files[0]}: no particles")
    centre = moment / mass if mass > 0 else (lo + hi) / 2
    half = MARGIN * np.max(np.maximum(hi - centre, centre - lo)) or 1.0
    return np.column_stack([centre - half, centre + half])


def _coordinates_and_masses(path: Path) -> Iterator[tuple[np.ndarray, np.ndarray]]:
    """(positions (n, 3), masses (n,)) of every PartType of the file, CHUNK rows at a time;
    masses from ``Masses`` or the ``MassTable``."""
    with open_file(path) as f:
        table = np.asarray(f["Header"].attrs.get("MassTable", np.zeros(N_TYPES)),
                           np.float64).reshape(-1)
        for t in range(N_TYPES):
            g = f.get(f"PartType{t}")
            if not isinstance(g, h5py.Group) or "Coordinates" not in g:
                continue
            coords = g["Coordinates"]
            if coords.ndim != 2 or coords.shape[1] != 3:
                raise SnapshotError(f"{path}: PartType{t}/Coordinates has shape "
                                    f"{coords.shape}, expected (n, 3)")
            for start in range(0, len(coords), CHUNK):
                x = np.asarray(coords[start:start + CHUNK], np.float64)
                m = (np.asarray(g["Masses"][start:start + CHUNK], np.float64) if "Masses" in g
                     else np.full(len(x), table[t] if t < len(table) else 0.0))
                yield x, m


class _DropPeriodicityWarning(logging.Filter):
    def filter(self, record: logging.LogRecord) -> bool:
        return "disabling periodicity" not in record.getMessage()


#: fields hybridtree writes in physical units (no a or h scaling in any run) and their cgs
PHYSICAL_FIELDS = MappingProxyType({"Potential": "cm**2/s**2", "Acceleration": "cm/s**2"})


def physical_field_units(path: str | Path) -> dict[tuple[str, str], str]:
    """yt's ``field_units`` of the file's :data:`PHYSICAL_FIELDS`, from their ``to_cgs``
    attributes: yt's code units would scale them by a (velocities are × sqrt(a) to yt in
    a cosmological snapshot) or not know them (``Acceleration``)."""
    out = {}
    with open_file(Path(path)) as f:
        for t in range(N_TYPES):
            for name, cgs in PHYSICAL_FIELDS.items():
                d = f.get(f"PartType{t}/{name}")
                if (isinstance(d, h5py.Dataset) and "to_cgs" in d.attrs
                        and not d.attrs.get("a_scaling", 0) and not d.attrs.get("h_scaling", 0)):
                    out[(f"PartType{t}", name)] = f"{float(d.attrs['to_cgs'])!r}*{cgs}"
    return out


def group_box(path: str | Path) -> np.ndarray:
    """The bounding cube (as :func:`bounding_box`) of a FOF catalogue's ``GroupPos``,
    weighted by ``GroupMass``; a unit cube at the origin for a catalogue of no groups."""
    with open_file(Path(path)) as f:
        g = f["Group"]
        x = np.asarray(g["GroupPos"], np.float64).reshape(-1, 3)
        m = np.asarray(g["GroupMass"], np.float64).reshape(-1)
    if not len(x):
        return np.array([[-1.0, 1.0]] * 3)
    centre = (m @ x) / m.sum() if m.sum() > 0 else x.mean(axis=0)
    half = MARGIN * np.max(np.abs(x - centre)) or 1.0
    return np.column_stack([centre - half, centre + half])


@contextmanager
def quiet_about_periodicity() -> Iterator[None]:
    """Without yt's warning that a bounding box disables periodicity: for open boundaries
    that is what is meant, not news."""
    from yt.utilities.logger import ytLogger
    dropped = _DropPeriodicityWarning()
    ytLogger.addFilter(dropped)
    try:
        yield
    finally:
        ytLogger.removeFilter(dropped)
