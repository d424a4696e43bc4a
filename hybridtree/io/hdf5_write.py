"""Writing hybridtree's GADGET-4-style HDF5 snapshots: :func:`write_snapshot`, one file per
snapshot (or per part of a multi-file set), written atomically -- under a temporary name
beside the final one (:func:`atomic_path`), renamed once complete.  HDF5 writes through
:class:`_Sink`, so that a failed write (a full disk) is one :class:`SnapshotWriteError`
naming the snapshot.  :mod:`hybridtree.io.snapshot` describes the layout written and
re-exports the public names.
"""

from __future__ import annotations

import errno
import os
import re
from pathlib import Path
from typing import Any

import h5py
import numpy as np

from ..errors import HybridtreeError
from ..faults import inject
from ..config.units import GYR_S, Units
from .gadget_units import CosmicHeader
from .hdf5_columns import BOX_STATE, ParticleChunks, as_chunks, column_values, of_type
from .hdf5_files import N_TYPES
from ..particles import DM_TYPE, Particles

__all__ = ["BOX_STATE", "UNITS_MARK", "ParticleChunks", "SnapshotWriteError", "atomic_path",
           "unit_dataset", "write_snapshot"]



class SnapshotWriteError(HybridtreeError, OSError):
    """Writing a snapshot failed (disk full, quota, I/O error); names the snapshot, not the
    temporary file it was being written to (which is removed)."""

    def __str__(self) -> str:
        return f"writing {self.filename}: {self.strerror}"


_FULL = (errno.ENOSPC, getattr(errno, "EDQUOT", errno.ENOSPC), errno.EFBIG)


def _write_error(exc: BaseException, path: Path) -> SnapshotWriteError:
    """The error of a failed write of ``path``, without HDF5's details (which name the
    temporary file): its errno (from the exception, or HDF5's "errno = N") in words."""
    code = exc.errno if isinstance(exc, OSError) else None
    if not code:
        m = re.search(r"errno = (\d+)", str(exc))
        code = int(m.group(1)) if m else None
    if code in _FULL:
        what = f"the disk is full ({os.strerror(code)}); the snapshot was not written"
    elif code:
        what = f"the write failed ({os.strerror(code)}); the snapshot was not written"
    else:
        detail = " ".join(str(exc).replace(atomic_path(path).name, path.name).split())
        what = f"the write failed ({detail or type(exc).__name__}); the snapshot was not written"
    return SnapshotWriteError(code or errno.EIO, what, str(path))


def atomic_path(final: Path) -> Path:
    """A temporary name beside ``final`` (same folder, so the rename is atomic)."""
    return final.with_name(f".{final.name}.{os.getpid()}.tmp")


def write_snapshot(path: str | Path, particles: Particles | ParticleChunks, time: float,
                   units: Units,
                   parameters: dict[str, Any] | None = None,
                   run_state: dict[str, Any] | None = None, overwrite: bool = False,
                   part: tuple[int, int, int] | None = None, commit: bool = True,
                   cosmology: dict[str, float] | None = None, double: bool = True) -> Path:
    """Write one snapshot file atomically (temporary file + rename); return its path.

    ``particles`` in internal units, physical coordinates.  ``cosmology`` (keys ``a``,
    ``h``, ``omega_m``, ``omega_lambda``): write GADGET's cosmological convention --
    ``Header/Time`` = a, ``Redshift``, ``HubbleParam``, ``Omega0``, ``OmegaLambda``;
    ``Coordinates`` comoving in units L/h (r / a · h), ``Masses`` in M/h, ``Velocities``
    the peculiar velocity / sqrt(a) (v - H(a) r, then / sqrt(a)); ``time`` (internal)
    goes into ``Time_GYR`` and the readers take it from ``RunState/Time``.  With the key
    ``box`` (a periodic box's comoving side) the particles are comoving already --
    positions x in [0, box) and canonical momenta p = a² dx/dt -- written as x h, the
    peculiar velocity p / a over sqrt(a), and ``BoxSize`` = box h.

    Each particle goes to the group of its type (``PartType{particles.types}``, in the
    order given); a group is written for every type with particles in the set.
    :class:`ParticleChunks` (a device state's) are written a chunk at a time: the host
    holds one chunk of them, not all.  ``double`` false: Coordinates, Velocities,
    Masses, Potential and Acceleration as float32 (``Header/Flag_DoublePrecision`` 0),
    and no exact state of a cosmological run (such a file is no restart point).

    ``part``: (file index, NumFilesPerSnapshot, the set's particle count per type, or
    one number for a set of one type) when this file is
    one of a multi-file snapshot (GADGET's ``BASE.K.hdf5`` convention).  ``commit``
    false: leave the file under its temporary name (:func:`atomic_path`) and return that
    path; the caller renames it (several processes commit a set together).
    Raises FileExistsError when ``path`` exists and ``overwrite`` is false.
    """
    path = Path(path)
    if path.exists() and not overwrite:
        raise FileExistsError(f"{path} exists (use --overwrite to replace it)")
    tmp = atomic_path(path)
    src = as_chunks(particles)
    counts = np.asarray(src.counts, np.uint64)
    _, n_files, total = part or (0, 1, counts)
    totals = np.asarray(total, np.uint64)
    if totals.ndim == 0:                # one number: a set of one type
        present = np.flatnonzero(counts)
        assert len(present) <= 1, "a set of several types needs its count per type"
        totals = np.zeros(N_TYPES, np.uint64)
        totals[present[0] if len(present) else DM_TYPE] = total
    assert totals.shape == (N_TYPES,), "part's total: one count per particle type"
    try:
        cosmic = None if cosmology is None else CosmicHeader(
            float(cosmology["a"]), float(cosmology["h"]), float(cosmology["omega_m"]),
            float(cosmology["omega_lambda"]))
        box = None if cosmology is None else cosmology.get("box")
        _write_file(tmp, path, src, time, units, parameters, run_state, counts, totals,
                    n_files, cosmic, box, double)
        inject("write", int((run_state or {}).get("Step", -1)))     # tests only
        if not commit:
            return tmp
        os.replace(tmp, path)
    except BaseException:
        tmp.unlink(missing_ok=True)
        raise
    return path


class _Sink:
    """The file object through which h5py (its ``fileobj`` driver) writes a snapshot:
    positioned writes to a file descriptor that never fail as HDF5 sees them.

    Why: with HDF5's own driver a full disk can fail the write that HDF5 makes while
    closing the file, after it has released part of the file's state; h5py then reports
    errors while deallocating and the process segfaults (h5py issues 914 and 1642).
    Here the first error (OSError, or an interrupt arriving during a write) is kept in
    :attr:`error`, later writes are dropped and reads past what was written give zeros, so
    HDF5 always closes the file; the caller raises the kept error afterwards.
    """

    def __init__(self, path: Path):
        self.path = path
        self.fd = os.open(path, os.O_RDWR | os.O_CREAT | os.O_TRUNC, 0o666)
        self.pos = self.size = 0
        self.error: BaseException | None = None

    def __repr__(self) -> str:
        # h5py names the HDF5 file by repr: File.filename and HDF5's messages name the path
        return str(self.path)

    def fail(self, exc: BaseException) -> None:
        """Keep ``exc`` unless an earlier error (its cause, as a rule) is kept."""
        if self.error is None:
            self.error = exc

    def _os(self, call: Any, *args: Any) -> Any:
        if self.error is None:
            try:
                return call(*args)
            except BaseException as exc:        # an interrupt too: HDF5 must not see it
                self.fail(exc)
        return None

    def write(self, data: Any) -> int:
        view = memoryview(data).cast("B")
        done = 0
        while self.error is None and done < len(view):
            written = self._os(os.pwrite, self.fd, view[done:], self.pos + done)
            if written == 0:
                self.fail(OSError(errno.EIO, os.strerror(errno.EIO)))
            done += written or 0
        self.pos += len(view)
        self.size = max(self.size, self.pos)
        return len(view)

    def read(self, n: int = -1) -> bytes:
        n = max(self.size - self.pos, 0) if n < 0 else n
        data = self._os(os.pread, self.fd, n, self.pos) or b""
        self.pos += n
        return data + bytes(n - len(data))

    def seek(self, offset: int, whence: int = os.SEEK_SET) -> int:
        base = {os.SEEK_SET: 0, os.SEEK_CUR: self.pos, os.SEEK_END: self.size}[whence]
        self.pos = base + offset
        return self.pos

    def tell(self) -> int:
        return self.pos

    def truncate(self, size: int | None = None) -> int:
        self.size = self.pos if size is None else size
        self._os(os.ftruncate, self.fd, self.size)
        return self.size

    def flush(self) -> None:
        pass

    def close(self) -> None:
        try:
            os.close(self.fd)       # network file systems report write errors here
        except OSError as exc:
            self.fail(exc)


def _write_file(tmp: Path, path: Path, src: ParticleChunks, time: float, units: Units,
                parameters: dict[str, Any] | None, run_state: dict[str, Any] | None,
                counts: np.ndarray, totals: np.ndarray, n_files: int,
                cosmic: CosmicHeader | None = None, box: float | None = None,
                double: bool = True) -> None:
    """The HDF5 file of :func:`write_snapshot` at ``tmp`` (through a :class:`_Sink`); a
    failure (a full disk: OSError; HDF5 errors: OSError or RuntimeError) is a
    :class:`SnapshotWriteError` naming ``path``."""
    try:
        sink = _Sink(tmp)
    except OSError as exc:
        raise _write_error(exc, path) from None
    # pynbody takes the age from Time_GYR (else from a cosmology, with warnings)
    gyr = float(time) * units.time_s / GYR_S
    try:
        with h5py.File(sink, "w") as f:
            _write_header(f, time, gyr, counts, totals, n_files, cosmic, box, double)
            write_particle_groups(f, src, totals, units, cosmic, box, double)
            _write_attrs(f, "Units", units.attrs())
            _write_attrs(f, "Parameters", {**(parameters or {}), "Time_GYR": gyr,
                                           **_cosmic_parameters(cosmic, parameters, box)})
            if run_state is not None:
                _write_attrs(f, "RunState", run_state)
    except (OSError, RuntimeError) as exc:
        sink.fail(exc)
    finally:
        sink.close()
    if isinstance(sink.error, (OSError, RuntimeError)):
        raise _write_error(sink.error, path)
    if sink.error is not None:
        raise sink.error        # an interrupt during a write, raised now that HDF5 is done


#: ``Config/VORONOI``: the mark by which yt (``yt.load``) and pynbody tell an AREPO-flavoured
#: GADGET file, the only flavour for which they take the units from the file; its value says
#: what it is here
UNITS_MARK = ("VORONOI", "not a mesh: marks the file's own units as meaningful to yt and "
                         "pynbody (hybridtree: collisionless particles only)")


def _cosmic_parameters(cosmic: CosmicHeader | None, parameters: dict[str, Any] | None,
                       box: float | None = None) -> dict[str, Any]:
    """GADGET-4's cosmological run parameters (pynbody takes h, the Ω's and a periodic
    box's ``BoxSize`` from the ``Parameters`` group, where GADGET-4 keeps them); none for
    other runs."""
    if cosmic is None:
        return {}
    out = {"ComovingIntegrationOn": 1, "HubbleParam": cosmic.h, "Omega0": cosmic.omega_m,
           "OmegaLambda": cosmic.omega_lambda,
           "OmegaBaryon": float((parameters or {}).get("cosmology.omega_b", 0.0))}
    if box is not None:
        out["BoxSize"] = float(box) * cosmic.h
    return out


def _write_header(f: h5py.File, time: float, gyr: float, counts: np.ndarray,
                  totals: np.ndarray, n_files: int, cosmic: CosmicHeader | None = None,
                  box: float | None = None, double: bool = True) -> None:
    """``Header`` (GADGET-4's keys; ``Time`` in internal units, ``Time_GYR`` = ``gyr``,
    the same in Gyr) and ``Config`` (see :data:`UNITS_MARK`)."""
    h = f.create_group("Header").attrs
    h["NumPart_ThisFile"] = counts
    h["NumPart_Total"] = totals & np.uint64(0xFFFFFFFF)
    h["NumPart_Total_HighWord"] = totals >> np.uint64(32)
    h["MassTable"] = np.zeros(N_TYPES)
    h["Time"] = float(time)
    h["Redshift"] = 0.0
    h["BoxSize"] = 0.0          # open boundaries: to yt a box is [0, BoxSize] and periodic
    h["NumFilesPerSnapshot"] = int(n_files)
    h["Omega0"] = 0.0
    h["OmegaLambda"] = 0.0
    h["HubbleParam"] = 1.0
    h["Flag_DoublePrecision"] = int(double)     # GADGET's flag: the floats' precision
    for flag in ("Cooling", "Sfr", "Feedback", "StellarAge", "Metals", "Entropy_ICs"):
        h[f"Flag_{flag}"] = 0
    h["Time_GYR"] = gyr
    if cosmic is not None:
        h["Time"] = cosmic.a
        h["Redshift"] = 1.0 / cosmic.a - 1.0
        h["Omega0"] = cosmic.omega_m
        h["OmegaLambda"] = cosmic.omega_lambda
        h["HubbleParam"] = cosmic.h
        if box is not None:
            h["BoxSize"] = float(box) * cosmic.h
    f.create_group("Config").attrs[UNITS_MARK[0]] = UNITS_MARK[1]


def unit_dataset(group: h5py.Group, name: str, shape: tuple[int, ...], dtype: type,
                 to_cgs: float, description: str, length: int = 0, mass: int = 0,
                 velocity: int = 0, a_scaling: float = 0.0, h_scaling: float = 0.0
                 ) -> h5py.Dataset:
    """An empty dataset with the unit attributes of GADGET-4 (``*_scaling``, ``to_cgs``:
    physical cgs = value × to_cgs × a^a_scaling × h^h_scaling) and of the EAGLE convention
    (``VarDescription`` with U_L/U_M/U_V, ``CGSConversionFactor``) that pynbody reads.
    Every dataset of a snapshot but the box state is made here: the seam where the
    failure tests make a write fail (a full disk), by wrapping this module function."""
    d = group.create_dataset(name, shape=shape, dtype=dtype)
    d.attrs["a_scaling"] = float(a_scaling)
    d.attrs["h_scaling"] = float(h_scaling)
    d.attrs["length_scaling"] = float(length)
    d.attrs["mass_scaling"] = float(mass)
    d.attrs["velocity_scaling"] = float(velocity)
    d.attrs["to_cgs"] = float(to_cgs)
    d.attrs["VarDescription"] = description
    d.attrs["CGSConversionFactor"] = float(to_cgs)
    d.attrs["aexp-scale-exponent"] = float(a_scaling)
    d.attrs["h-scale-exponent"] = float(h_scaling)
    return d


def _create(g: h5py.Group, n: int, values: dict[str, np.ndarray | None], units: Units,
            double: bool, cosmic: CosmicHeader | None, box: float | None
            ) -> dict[str, h5py.Dataset]:
    """One ``PartTypeN`` group's datasets for ``n`` particles, empty; of the types of
    ``values`` (:func:`_values` of some of its rows), but float32 for the floats where not
    ``double`` (the exact state, :data:`BOX_STATE`, is then left out: no restart point)."""
    u = units

    def real(key: str) -> np.dtype:
        return values[key].dtype if double else np.dtype(np.float32)
    a_pos = h_pos = a_vel = 0.0
    if cosmic is not None:
        a_pos, h_pos, a_vel = 1.0, -1.0, 0.5
    out = {"pos": unit_dataset(g, "Coordinates", (n, 3), real("pos"), u.length_cm,
                               "Positions [U_L ]", length=1, a_scaling=a_pos,
                               h_scaling=h_pos),
           "vel": unit_dataset(g, "Velocities", (n, 3), real("vel"), u.velocity_cm_per_s,
                               "Velocities [U_V ]", velocity=1, a_scaling=a_vel),
           "mass": unit_dataset(g, "Masses", (n,), real("mass"), u.mass_g, "Masses [U_M ]",
                                mass=1, h_scaling=h_pos)}
    if cosmic is not None and double:
        # GADGET's numbers (x h / a, p / a^1.5, m h) do not round-trip to the same bits; a
        # restart continues from these (hybridtree.run.restart.exact_box_state)
        d = out["state"] = g.create_dataset(BOX_STATE, shape=(n, 7), dtype=np.float64)
        d.attrs["Description"] = (
            "hybridtree's integration state of a periodic box, internal units without h: "
            "comoving x (3), canonical momentum p = a^2 dx/dt (3), mass (1)" if box is not None
            else "hybridtree's integration state of an expanding sphere, internal units "
                 "without h: physical x (3), physical v (3), mass (1)")
    out["ids"] = unit_dataset(g, "ParticleIDs", (n,), np.uint64, 1.0,
                              "Unique particle identifiers (dimensionless)")
    if values["pot"] is not None:
        out["pot"] = unit_dataset(g, "Potential", (n,), real("pot"), u.velocity_cm_per_s ** 2,
                                  "Gravitational potential [U_V^2 ]", velocity=2)
    if values["acc"] is not None:
        out["acc"] = unit_dataset(g, "Acceleration", (n, 3), real("acc"),
                                  u.velocity_cm_per_s ** 2 / u.length_cm,
                                  "Gravitational acceleration [U_V^2 /U_L ]", length=-1,
                                  velocity=2)
    return out


def write_particle_groups(f: h5py.File, src: ParticleChunks, totals: np.ndarray,
                          units: Units, cosmic: CosmicHeader | None, box: float | None,
                          double: bool) -> None:
    """A ``PartTypeN`` group for every type with particles in the set (``totals``), its
    datasets created at full size with a chunk's first rows of that type, then filled a
    chunk of ``src`` at a time; floats as given (``double``) or float32 (rounded to
    nearest from float64)."""
    types = [int(t) for t in np.flatnonzero(totals)]
    groups = {t: f.create_group(f"PartType{t}") for t in types}
    sets: dict[int, dict[str, h5py.Dataset]] = {}
    at = dict.fromkeys(types, 0)
    for chunk in src.chunks():
        for t in types:
            p = of_type(chunk, t)
            k = len(p)
            if k == 0 and t in sets:
                continue
            values = column_values(p, units, cosmic, box)
            if t not in sets:
                sets[t] = _create(groups[t], int(src.counts[t]), values, units, double,
                                  cosmic, box)
            for key, d in sets[t].items():
                v = values[key]
                if k:
                    d[at[t]:at[t] + k] = v if v.dtype == d.dtype else v.astype(d.dtype)
            at[t] += k
        chunk = p = values = v = None       # before the next chunk: one on the host at once
    for t in types:             # no rows here (a part of a multi-file set without them)
        if t not in sets:
            empty = np.empty((0, 3))
            nothing = Particles(empty, empty, np.empty(0), np.empty(0, np.uint64),
                                empty if src.has_acc else None,
                                np.empty(0) if src.has_pot else None)
            _create(groups[t], 0, column_values(nothing, units, cosmic, box), units, double,
                    cosmic, box)
    assert all(at[t] == int(src.counts[t]) for t in types), "chunks and counts disagree"


def _write_attrs(f: h5py.File, group: str, values: dict[str, Any]) -> None:
    a = f.create_group(group).attrs
    for k, v in values.items():
        a[k] = v
