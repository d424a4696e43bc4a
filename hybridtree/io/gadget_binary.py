"""GADGET-2's binary snapshot and initial-conditions format, ``SnapFormat``/``ICFormat`` 1
and 2 (what N-GenIC, 2LPTic, MUSIC and GADGET-2 itself write): reading one file
(:func:`read_binary_part`) and writing a set (:func:`write_gadget2`).

A file is a sequence of Fortran unformatted records, ``<int n> n bytes <int n>``, the
markers in the file's byte order (either endianness is read; the first marker, 256 or 8,
tells which).  Format 1 is the records alone, in a fixed order; format 2 puts before each
record an 8-byte record holding a 4-character label and an int "next block" (the size of
the record that follows, markers included: n + 8)::

    [format 2: <8> "HEAD" <264> <8>]  <256> header <256>
    [format 2: <8> "POS " <n+8> <8>]  <n>  positions, float[N][3]  <n>
    [format 2: <8> "VEL " ...      ]  <n>  velocities, float[N][3] <n>
    [format 2: <8> "ID  " ...      ]  <n>  IDs, uint32 or uint64 [N] <n>
    [format 2: <8> "MASS" ...      ]  <n>  masses, float[Nm]   <n>   (only if Nm > 0)
    [format 2: <8> "U   " ...      ]  <n>  gas internal energy, float[N0] (only if N0 > 0)

N = sum of the header's ``npart`` (this file), ordered by type 0..5; Nm counts the particles
of the types whose mass-table entry ``massarr`` is 0 (the others all have that mass).  A
block with no element is left out altogether, as GADGET-2 writes it.  "float" is float32,
or float64 for a code compiled with INPUT_IN_DOUBLEPRECISION: the reader takes each block's
element size from its byte count, so either is read.  Snapshots carry more blocks after
these (RHO, HSML, ...); they are skipped.

The 256-byte header (C layout, no padding), offsets in bytes::

      0 int npart[6]            this file          168 uint npartTotalHighWord[6]
     24 double massarr[6]                          192 int flag_entropy_instead_u
     72 double time (scale factor a)               196 int flag_doubleprecision (GADGET-3/4)
     80 double redshift                            200 unused, to 256
     88 int flag_sfr, flag_feedback
     96 uint npartTotal[6]      low 32 bits of the totals of the set
    120 int flag_cooling, 124 int num_files
    128 double BoxSize, Omega0, OmegaLambda, HubbleParam
    160 int flag_stellarage, flag_metals

A set of ``num_files`` > 1 files is ``STEM.0`` ... ``STEM.(n-1)``, each type's particles
spread over the files in order.  GADGET's numbers are comoving: lengths in UnitLength/h
(kpc/h by default), masses in UnitMass/h (10^10 Msun/h), velocities u = v_pec / sqrt(a) in
UnitVelocity (km/s, no h) -- see :func:`write_gadget2` for the conversion.
"""

from __future__ import annotations

import struct
from dataclasses import dataclass
from pathlib import Path
from typing import BinaryIO

import numpy as np

from ..config.units import Units
from .gadget_defaults import GADGET_DEFAULT_UNITS
from .gadget_records import Records, element_size
from .hdf5_files import N_TYPES, SnapshotError

__all__ = ["HEADER_BYTES", "FilePart", "binary_layout", "header_dtype", "read_binary_part",
           "write_gadget2", "write_gadget2_snapshot", "write_set"]

HEADER_BYTES = 256
_MAX_RECORD = 2 ** 31 - 1           # the markers are C ints


def header_dtype(endian: str = "<") -> np.dtype:
    """GADGET-2's 256-byte header as a packed numpy record in byte order ``endian``."""
    i, u, d = endian + "i4", endian + "u4", endian + "f8"
    dt = np.dtype([("npart", i, 6), ("massarr", d, 6), ("time", d), ("redshift", d),
                   ("flag_sfr", i), ("flag_feedback", i), ("npartTotal", u, 6),
                   ("flag_cooling", i), ("num_files", i), ("BoxSize", d), ("Omega0", d),
                   ("OmegaLambda", d), ("HubbleParam", d), ("flag_stellarage", i),
                   ("flag_metals", i), ("npartTotalHighWord", u, 6),
                   ("flag_entropy_instead_u", i), ("flag_doubleprecision", i),
                   ("fill", "V56")])
    assert dt.itemsize == HEADER_BYTES
    return dt


@dataclass
class FilePart:
    """One file of a set, its numbers as the file stores them (file units with h,
    velocities u = v_pec / sqrt(a)): header values and per type 0..5 the arrays ``pos``
    (n, 3), ``vel`` (n, 3), ``ids`` (n,) or None (no IDs in the file), ``mass`` (n,).
    ``units``: (length cm, mass g, velocity cm/s) the file states, None if it states none;
    ``source``: the format in words."""
    path: Path
    source: str
    npart: np.ndarray
    npart_total: np.ndarray | None
    num_files: int
    time: float | None
    redshift: float | None
    box: float | None
    omega_m: float | None
    omega_lambda: float | None
    h: float | None
    pos: list[np.ndarray]
    vel: list[np.ndarray]
    ids: list[np.ndarray | None]
    mass: list[np.ndarray]
    units: tuple[float, float, float] | None = None


def binary_layout(path: Path) -> tuple[int, str] | None:
    """(format 1 or 2, byte order "<" or ">") of a GADGET-2 binary file, from its first
    record marker (256: the header; 8: format 2's label record, which must say HEAD);
    None for anything else."""
    with open(path, "rb") as f:
        head = f.read(8)
    if len(head) < 8:
        return None
    for endian in "<>":
        first = struct.unpack(endian + "I", head[:4])[0]
        if first == HEADER_BYTES:
            return 1, endian
        if first == 8 and head[4:8] == b"HEAD":
            return 2, endian
    return None


def _check_header(path: Path, h: np.void) -> None:
    """SnapshotError for a header value that is not a finite number or a mass."""
    for key in ("time", "redshift", "BoxSize", "Omega0", "OmegaLambda", "HubbleParam"):
        if not np.isfinite(h[key]):
            raise SnapshotError(f"{path}: its header's {key} = {h[key]} is not a finite number")
    if not (np.isfinite(h["massarr"]) & (h["massarr"] >= 0)).all():
        raise SnapshotError(f"{path}: its header's massarr = {h['massarr'].tolist()} holds a "
                            f"value that is not a mass (finite, >= 0)")


def read_binary_part(path: Path, header_only: bool = False) -> FilePart:
    """One file of a GADGET-2 binary set (format 1 or 2, either byte order), its numbers
    as stored (:class:`FilePart`); SnapshotError (a ValueError) for a file that is not
    one or whose blocks do not match its header.  ``header_only``: the header's values
    alone (counts, time, cosmology; ``pos``, ``vel``, ``ids``, ``mass`` empty), for what
    must be known before the particles are read (a run's size, a set's files)."""
    layout = binary_layout(path)
    if layout is None:
        raise SnapshotError(f"{path}: not a GADGET-2 binary file (format 1 or 2)")
    fmt, endian = layout
    with open(path, "rb") as f:
        records = Records(f, path, endian)
        if fmt == 2:
            records.skip_or_read("HEAD label", True)
        raw = records.skip_or_read("header", True)
        if len(raw) != HEADER_BYTES:
            raise SnapshotError(f"{path}: its header record holds {len(raw)} bytes, not "
                                f"{HEADER_BYTES}: inconsistent block sizes")
        h = np.frombuffer(raw, header_dtype(endian))[0]
        _check_header(path, h)
        npart = h["npart"].astype(np.int64)
        if (npart < 0).any():
            raise SnapshotError(f"{path}: negative particle numbers in its header "
                                f"(npart = {npart.tolist()})")
        n = int(npart.sum())
        table = h["massarr"].astype(np.float64)
        in_block = (npart > 0) & (table == 0)
        n_mass = int(npart[in_block].sum())
        wanted = [("POS ", n, 3, "f", "POS"), ("VEL ", n, 3, "f", "VEL"),
                  ("ID  ", n, 1, "u", "ID"), ("MASS", n_mass, 1, "f", "MASS")]
        data = {}
        # header_only: sizes checked, not read, so that a header claiming more particles
        # than the file holds is told before anything is sized from its counts
        labelled = records.labelled() if fmt == 2 and n else {}
        for label, count, width, kind, what in wanted:
            if count == 0:
                continue                    # GADGET-2 leaves an empty block out
            if fmt == 2:
                if label not in labelled:
                    raise SnapshotError(f"{path}: no {label.strip()} block, but its header "
                                        f"lists {count} particles that need one")
                f.seek(labelled[label][0])
            block = records.skip_or_read(what, not header_only, optional=True)
            if block is None:
                raise SnapshotError(f"{path}: the file ends before its {what} block "
                                    f"({count} particles in its header): a truncated file")
            size = element_size(path, records.size, count, width, what)
            if not header_only:
                values = np.frombuffer(block, f"{endian}{kind}{size}")
                data[label] = values.reshape(count, width) if width > 1 else values
    edges = np.concatenate([[0], np.cumsum(npart)])
    mass_edges = np.concatenate([[0], np.cumsum(np.where(in_block, npart, 0))])
    pos, vel, ids, mass = [], [], [], []
    for t in range(0 if header_only else N_TYPES):
        lo, hi = edges[t], edges[t + 1]
        pos.append(data["POS "][lo:hi] if n else np.zeros((0, 3)))
        vel.append(data["VEL "][lo:hi] if n else np.zeros((0, 3)))
        ids.append(data["ID  "][lo:hi].astype(np.uint64) if n else np.zeros(0, np.uint64))
        mass.append(data["MASS"][mass_edges[t]:mass_edges[t + 1]] if in_block[t]
                    else np.full(hi - lo, table[t]))
    total = (h["npartTotal"].astype(np.int64)
             + (h["npartTotalHighWord"].astype(np.int64) << 32))
    words = {"<": "little-endian", ">": "big-endian"}[endian]
    sizes = ", ".join(f"{k.strip()} {v.dtype.itemsize * 8}-bit" for k, v in data.items())
    hubble = float(h["HubbleParam"])
    return FilePart(path, f"GADGET-2 binary format {fmt} ({words}{', ' if sizes else ''}"
                          f"{sizes})", npart, total, int(h["num_files"]), float(h["time"]),
                    float(h["redshift"]), float(h["BoxSize"]), float(h["Omega0"]),
                    float(h["OmegaLambda"]), hubble if hubble > 0 else None,
                    pos, vel, ids, mass)


def _write_block(f: BinaryIO, fmt: int, label: str, payload: bytes, endian: str) -> None:
    """One record, after its label record in format 2."""
    if len(payload) > _MAX_RECORD:
        raise ValueError(f"{f.name}: the {label.strip()} block would hold {len(payload)} "
                         f"bytes, more than a record marker can say: write more files")
    marker = struct.pack(endian + "i", len(payload))
    if fmt == 2:
        # the label record: 8 bytes, the label and the size of the record that follows
        f.write(struct.pack(endian + "i4sii", 8, label.encode("ascii"), len(payload) + 8, 8))
    f.write(marker + payload + marker)


def write_gadget2(path_stem: str | Path, pos: np.ndarray, vel: np.ndarray, mass: np.ndarray,
                  ids: np.ndarray, box: float, a: float, omega_m: float, omega_lambda: float,
                  h: float, *, units: Units, types: np.ndarray | None = None, fmt: int = 1,
                  n_files: int = 1, id_bytes: int = 4, double: bool = False,
                  endian: str = "<",
                  unit_length_cm: float = GADGET_DEFAULT_UNITS["UnitLength_in_cm"],
                  unit_mass_g: float = GADGET_DEFAULT_UNITS["UnitMass_in_g"],
                  unit_velocity_cm_per_s: float = GADGET_DEFAULT_UNITS["UnitVelocity_in_cm_per_s"]
                  ) -> list[Path]:
    """Write a periodic box as GADGET-2 binary initial conditions (the inverse of
    :func:`hybridtree.io.box_ics.read_box_ics`, whose :class:`BoxICs` fields these are).

    Arguments in the internal units ``units`` (G = 1), h divided out: ``pos`` (N, 3)
    comoving positions in [0, box) (others are wrapped), ``box`` the comoving box side,
    ``vel`` (N, 3) peculiar velocities a dx/dt, ``mass`` (N,), ``ids`` (N,) integers,
    ``types`` (N,) GADGET types 0..5 (default all 1: collisionless), ``a`` the scale factor,
    ``h`` = H0 / (100 km/s/Mpc).  The file holds GADGET's numbers: lengths x h in
    ``unit_length_cm``, masses x h in ``unit_mass_g``, velocities u = v_pec / sqrt(a) in
    ``unit_velocity_cm_per_s`` (defaults: GADGET's kpc/h, 10^10 Msun/h, km/s).

    ``fmt`` 1 or 2; ``n_files`` files ``STEM.0`` ... (``STEM`` itself when 1), each type's
    particles split into ``n_files`` consecutive runs; ``id_bytes`` 4 or 8 (GADGET's
    LONG_IDS / IDS_64BIT); ``double``: float64 positions, velocities and masses
    (INPUT_IN_DOUBLEPRECISION; also flag_doubleprecision in the header); ``endian`` "<"
    or ">".  A type whose masses are all equal gets them in the mass table, others go in
    a MASS block; gas (type 0) gets a U block of zeros, which GADGET reads from ICs.
    Returns the files written.
    """
    pos, vel = np.asarray(pos, np.float64), np.asarray(vel, np.float64)
    mass, ids = np.asarray(mass, np.float64), np.asarray(ids)
    n = len(pos)
    types = np.ones(n, np.int8) if types is None else np.asarray(types)
    _check(pos, vel, mass, ids, types, fmt, id_bytes, endian, n_files)
    if not (box > 0 and a > 0 and h > 0):
        raise ValueError(f"write_gadget2: box = {box}, a = {a}, h = {h} must be positive")
    length = units.length_cm * h / unit_length_cm
    box_file = box * length
    real = np.dtype(endian + ("f8" if double else "f4"))
    # wrap where the file's float type can tell: x < box in float64 may round to box
    x = np.mod(pos * length, box_file).astype(real)
    x[x.astype(np.float64) >= box_file] = 0.0
    u = (vel * (units.velocity_cm_per_s / np.sqrt(a) / unit_velocity_cm_per_s)).astype(real)
    m = mass * (units.mass_g * h / unit_mass_g)
    return write_set(Path(path_stem), x, u, m, ids, types, fmt, n_files, id_bytes, double,
                      endian, time=a, redshift=1.0 / a - 1.0, box=box_file, omega_m=omega_m,
                      omega_lambda=omega_lambda, h=h)


def write_gadget2_snapshot(path_stem: str | Path, pos: np.ndarray, vel: np.ndarray,
                           mass: np.ndarray, ids: np.ndarray, time: float, *, units: Units,
                           types: np.ndarray | None = None, fmt: int = 2, n_files: int = 1,
                           id_bytes: int = 8, double: bool = True, endian: str = "<"
                           ) -> list[Path]:
    """Write isolated particles (a galaxy, not a box) as a GADGET-2 binary snapshot, in
    GADGET's default units (kpc, 10^10 Msun, km/s, time in kpc / (km/s)): what a
    non-cosmological GADGET-2 run and the tools around it (and hybridtree's reader) take
    such a file to hold.  ``pos``, ``vel``, ``mass`` and ``time`` in the internal
    ``units`` (G = 1); BoxSize 0, Omega0 0, HubbleParam 1; positions are not wrapped.
    Other arguments as :func:`write_gadget2`."""
    pos, vel = np.asarray(pos, np.float64), np.asarray(vel, np.float64)
    mass, ids = np.asarray(mass, np.float64), np.asarray(ids)
    n = len(pos)
    types = np.ones(n, np.int8) if types is None else np.asarray(types)
    _check(pos, vel, mass, ids, types, fmt, id_bytes, endian, n_files)
    real = np.dtype(endian + ("f8" if double else "f4"))
    ul, um, uv = (GADGET_DEFAULT_UNITS[k] for k in ("UnitLength_in_cm", "UnitMass_in_g",
                                                     "UnitVelocity_in_cm_per_s"))
    return write_set(Path(path_stem), (pos * (units.length_cm / ul)).astype(real),
                     (vel * (units.velocity_cm_per_s / uv)).astype(real),
                     mass * (units.mass_g / um), ids, types, fmt, n_files, id_bytes, double,
                     endian, time=float(time) * units.time_s / (ul / uv), redshift=0.0,
                     box=0.0, omega_m=0.0, omega_lambda=0.0, h=1.0)


def _check(pos, vel, mass, ids, types, fmt, id_bytes, endian, n_files) -> None:
    n = len(pos)
    if (pos.shape != (n, 3) or vel.shape != (n, 3) or mass.shape != (n,) or ids.shape != (n,)
            or types.shape != (n,)):
        raise ValueError(f"write_gadget2: pos {pos.shape}, vel {vel.shape}, mass {mass.shape}, "
                         f"ids {ids.shape}, types {types.shape} do not describe N particles")
    if fmt not in (1, 2) or id_bytes not in (4, 8) or endian not in "<>" or n_files < 1:
        raise ValueError(f"write_gadget2: fmt={fmt} (1 or 2), id_bytes={id_bytes} (4 or 8), "
                         f"endian={endian!r} ('<' or '>'), n_files={n_files} (>= 1)")
    if n and ((types < 0) | (types >= N_TYPES)).any():
        raise ValueError("write_gadget2: types must be 0..5")
    if n and (ids.min() < 0 or (id_bytes == 4 and int(ids.max()) >= 2 ** 32)):
        raise ValueError(f"write_gadget2: IDs from {ids.min()} to {ids.max()} do not fit "
                         f"{id_bytes * 8}-bit unsigned integers")


def write_set(stem: Path, x: np.ndarray, u: np.ndarray, m: np.ndarray, ids: np.ndarray,
               types: np.ndarray, fmt: int, n_files: int, id_bytes: int, double: bool,
               endian: str, *, time: float, redshift: float, box: float, omega_m: float,
               omega_lambda: float, h: float) -> list[Path]:
    """The files of a set: positions ``x`` and velocities ``u`` in the file's float type,
    masses ``m`` (float64) in file units, each type's particles split over the files."""
    real = x.dtype
    ids = ids.astype(endian + ("u8" if id_bytes == 8 else "u4"))

    order = np.argsort(types, kind="stable")
    counts = np.bincount(types.astype(np.int64), minlength=N_TYPES)
    edges = np.concatenate([[0], np.cumsum(counts)])
    table = np.zeros(N_TYPES)
    for t in range(N_TYPES):
        mt = m[order[edges[t]:edges[t + 1]]]
        if len(mt) and mt[0] > 0 and (mt == mt[0]).all():
            table[t] = mt[0]
    paths = [stem] if n_files == 1 else [stem.with_name(f"{stem.name}.{k}")
                                         for k in range(n_files)]
    header = np.zeros((), header_dtype(endian))
    header["massarr"], header["time"], header["redshift"] = table, time, redshift
    header["npartTotal"] = (counts & 0xFFFFFFFF).astype(np.uint32)
    header["npartTotalHighWord"] = (counts >> 32).astype(np.uint32)
    header["num_files"], header["BoxSize"] = n_files, box
    header["Omega0"], header["OmegaLambda"], header["HubbleParam"] = omega_m, omega_lambda, h
    header["flag_doubleprecision"] = int(double)
    for k, path in enumerate(paths):
        rows = [order[edges[t] + counts[t] * k // n_files:edges[t] + counts[t] * (k + 1) // n_files]
                for t in range(N_TYPES)]
        header["npart"] = [len(r) for r in rows]
        mine = np.concatenate(rows).astype(np.int64)
        heavy = np.concatenate([r for t, r in enumerate(rows) if table[t] == 0] + [[]]
                               ).astype(np.int64)
        with open(path, "wb") as f:
            _write_block(f, fmt, "HEAD", header.tobytes(), endian)
            for label, values in (("POS ", x[mine]), ("VEL ", u[mine]), ("ID  ", ids[mine]),
                                  ("MASS", m[heavy].astype(real)),
                                  ("U   ", np.zeros(len(rows[0]), real))):
                if len(values):
                    _write_block(f, fmt, label, values.tobytes(), endian)
    return paths
