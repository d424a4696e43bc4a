"""GADGET-2 binary snapshots and initial conditions (format 1 or 2, either byte order, one
file or a set ``STEM.0`` ... ``STEM.(n-1)``) as the particle readers' columns, for
``ics.kind = "file"``, ``Simulation.from_snapshot`` and ``hybridtree info``: what
MakeNewDisk, GalIC, DICE, N-GenIC, MUSIC and GADGET-2 itself write.

The numbers are read as :mod:`hybridtree.io.gadget_units` reads a GADGET HDF5 file that
states no units (GADGET's kpc/h, 10^10 Msun/h and km/s; comoving only where ``Time`` is
the scale factor of ``Redshift``), from the header's ``time``, ``redshift``, ``Omega0``,
``OmegaLambda`` and ``HubbleParam``.  Masses come from the MASS block or the header's
mass table; particles without IDs are numbered 1.. by their row in the set.
"""

from __future__ import annotations

from pathlib import Path

import numpy as np

from .box_ics import box_ics_files
from .gadget_binary import FilePart, binary_layout, read_binary_part
from .hdf5_files import N_TYPES, SnapshotError

__all__ = ["binary_files", "binary_header", "count_binary", "read_binary_columns"]


def binary_files(path: str | Path) -> list[Path] | None:
    """The files of the GADGET-2 binary set ``path`` names (a file, any part ``STEM.K``
    or the stem), None when it names no binary file (HDF5, or nothing)."""
    path = Path(path)
    first = path if path.is_file() else path.with_name(f"{path.name}.0")
    if not first.is_file() or binary_layout(first) is None:
        return None
    return box_ics_files(first)


def _selected(types: str) -> list[int]:
    if types == "all":
        return list(range(N_TYPES))
    if types.startswith("PartType") and types[8:].isdigit() and int(types[8:]) < N_TYPES:
        return [int(types[8:])]
    raise SnapshotError(f"no group {types!r} in a GADGET-2 binary file (PartType0 .. "
                        f"PartType5 or all)")


def count_binary(files: list[Path], types: str = "all") -> int:
    """How many particles of ``types`` the set holds (every file's header)."""
    return sum(int(read_binary_part(q, header_only=True).npart[_selected(types)].sum())
               for q in files)


def binary_header(part: FilePart) -> dict[str, float]:
    """The header's values under the HDF5 names :mod:`hybridtree.io.gadget_units` reads."""
    out = {"Time": part.time, "Redshift": part.redshift, "BoxSize": part.box,
           "Omega0": part.omega_m, "OmegaLambda": part.omega_lambda,
           "NumFilesPerSnapshot": part.num_files}
    if part.h is not None:
        out["HubbleParam"] = part.h
    return {k: v for k, v in out.items() if v is not None}


def read_binary_columns(files: list[Path], types: str, share: tuple[int, int]
                        ) -> tuple[dict[str, np.ndarray], float, dict[str, float]]:
    """This share of every (file, type) block (rows n·rank/size .. of each, as
    :func:`hybridtree.io.hdf5_read.read_set` shares HDF5 sets): columns ``pos``, ``vel``,
    ``mass``, ``ids``, ``types`` as stored, the header's time and its values
    (:func:`binary_header`)."""
    rank, size = share
    wanted = _selected(types)
    cols: dict[str, list[np.ndarray]] = {k: [] for k in ("pos", "vel", "mass", "ids", "row",
                                                          "types")}
    first, offset, missing_ids = None, 0, False
    for q in files:
        part = read_binary_part(q)
        if first is None:
            first = part
        elif (part.time, part.num_files) != (first.time, first.num_files):
            raise SnapshotError(f"{q}: time {part.time} and {part.num_files} files differ from "
                                f"{files[0].name}'s: files of different sets")
        for t in range(N_TYPES):
            n = len(part.pos[t])
            if t in wanted:
                lo, hi = n * rank // size, n * (rank + 1) // size
                cols["pos"].append(part.pos[t][lo:hi].astype(np.float64))
                cols["vel"].append(part.vel[t][lo:hi].astype(np.float64))
                cols["mass"].append(part.mass[t][lo:hi].astype(np.float64))
                if part.ids[t] is None:
                    missing_ids = True
                    cols["ids"].append(np.zeros(hi - lo, np.uint64))
                else:
                    cols["ids"].append(part.ids[t][lo:hi].astype(np.uint64))
                cols["row"].append(np.arange(offset + lo, offset + hi, dtype=np.uint64))
                cols["types"].append(np.full(hi - lo, t, np.uint8))
            offset += n
    assert first is not None
    out = {k: np.concatenate(v) if v else np.zeros((0, 3) if k in ("pos", "vel") else 0)
           for k, v in cols.items()}
    if missing_ids:
        out["ids"] = out["row"] + np.uint64(1)
    out["types"] = out["types"].astype(np.uint8)
    if not len(out["mass"]) and share[1] == 1:
        raise SnapshotError(f"{files[0]}: no particles of {types}")
    return out, float(first.time or 0.0), binary_header(first)
