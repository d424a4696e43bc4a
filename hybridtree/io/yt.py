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

from pathlib import Path
from typing import Any

from .snapshot import snapshot_files
from .yt_files import (bounding_box, group_box, is_hybridtree_file, physical_field_units,
                       quiet_about_periodicity, unit_base_and_box)

__all__ = ["bounding_box", "group_box", "is_hybridtree_file", "load_yt",
           "physical_field_units", "quiet_about_periodicity", "unit_base_and_box"]


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
