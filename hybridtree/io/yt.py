"""yt for GADGET-style snapshots: :func:`load_yt`, one call, the file's own units; and the
helpers of hybridtree's yt frontend (:mod:`hybridtree.io.yt_frontend`, through which a plain
``yt.load`` of hybridtree's snapshots and FOF catalogues does the same).

Plain ``yt.load`` (yt 4.4) reads a GADGET HDF5 file with yt's defaults (1 kpc, 1e10 Msun,
1 km/s) whatever its ``Units`` group says; of the non-cosmological flavours it honours the
file's units only for AREPO's, which hybridtree's snapshots claim for that reason
(``Config/VORONOI``, see :data:`hybridtree.io.snapshot.UNITS_MARK`).  Older snapshots and
other GADGET files lack the mark.  And with ``BoxSize`` 0 (open boundaries) yt knows no domain
when it sets up its units, so it has no ``unitary`` unit (plots with a ``width`` fail) and
treats the box it later infers from the particles as periodic.  :func:`load_yt` passes both
the units and a non-periodic bounding box; so does plain ``yt.load`` where hybridtree is
installed (its ``yt.frontends`` entry point, :mod:`hybridtree.io.yt_frontend`).
"""

from __future__ import annotations

import logging
from contextlib import contextmanager
from pathlib import Path
from typing import Any, Iterator

import h5py
import numpy as np

from .gadget_units import file_units
from .hdf5_files import N_TYPES, check_extra_types, open_file
from .snapshot import SnapshotError, snapshot_files

__all__ = ["bounding_box", "group_box", "is_hybridtree_file", "load_yt",
           "physical_field_units", "quiet_about_periodicity", "unit_base_and_box"]

#: rows of Coordinates read at a time while finding the bounding box
CHUNK = 1 << 20
#: the bounding box's half-width over the particles' farthest distance from their centre
#: of mass: particles exactly on its faces would be lost
MARGIN = 1.01


def load_yt(path: str | Path, **kwargs: Any) -> Any:
    """The yt dataset of the snapshot at ``path`` in the file's own units.

    ``path``: a snapshot file, any part of a multi-file set (the whole set is loaded), or
    the stem of either (``out/snapshot_0002``).  yt's code units are then the file's
    ``UnitLength_in_cm``, ``UnitMass_in_g`` and ``UnitVelocity_in_cm_per_s`` (time: length
    over velocity; for hybridtree's default units 1 kpc, 1e10 Msun, 207.4 km/s and
    4.715 Myr), so ``ds.current_time`` and every field convert to physical units correctly;
    a file without units gets yt's GADGET defaults.  Open boundaries (``BoxSize`` 0): the
    domain is a cube centred on the centre of mass holding every particle, not periodic;
    a periodic box (``BoxSize`` > 0) stays [0, BoxSize] and periodic.

    ``kwargs`` go to yt's ``GadgetHDF5Dataset``, and replace the ``unit_base`` and
    ``bounding_box`` derived here when given.
    Raises SnapshotError (a ValueError) for a missing, incomplete or non-GADGET file and
    ImportError when yt is not installed.
    """
    dataset_class = _hybridtree_dataset()
    files = snapshot_files(path)
    units, box_size = unit_base_and_box(files[0])
    if units is not None:
        kwargs.setdefault("unit_base", units)
    if box_size == 0 and "bounding_box" not in kwargs:
        kwargs["bounding_box"] = bounding_box(files)
    return dataset_class(str(files[0]), **kwargs)


def _hybridtree_dataset() -> type:
    """hybridtree's yt dataset class (named, so that any GADGET-style file gets it);
    ImportError saying what to install when yt is missing."""
    try:
        from .yt_frontend import HybridtreeHDF5Dataset
    except ImportError as exc:
        raise ImportError(f"hybridtree.io.load_yt needs yt, which is not installed "
                          f"({exc}): pip install yt") from None
    return HybridtreeHDF5Dataset


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
PHYSICAL_FIELDS = {"Potential": "cm**2/s**2", "Acceleration": "cm/s**2"}


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
