"""The FOF halo catalogue of a snapshot, in GADGET-4's conventions and file layout.

- :func:`find_halos`: the FOF groups of a (cosmological) snapshot as a
  :class:`HaloCatalogue`: linking length b times the mean comoving interparticle
  separation (:func:`hybridtree.analysis.halos.fof.linking_length`), group properties in GADGET-4's
  conventions.
- :func:`write_catalogue` (:mod:`hybridtree.analysis.halos.catalogue_file`): the catalogue
  as GADGET-4's ``fof_tab_NNN.hdf5``.

Conventions (GADGET's, as hybridtree writes a cosmological snapshot): ``Header/Time`` is
the scale factor a, ``HubbleParam`` h, ``Omega0`` Ω_m, ``OmegaLambda`` Ω_Λ; ``Coordinates``
are comoving in UnitLength/h, ``Masses`` in UnitMass/h, ``Velocities`` u = v_pec / sqrt(a)
(v_pec the peculiar velocity, in UnitVelocity).  A file with no ``Omega0`` > 0 is not
cosmological: a = 1, h = 1, and the linking length must be given.

What GADGET-4 does and this module follows (src/fof/fof.cc, fof_io.cc, fof.h, io/io.cc,
main/init.cc, io/snap_io.h of GADGET-4):

- the linking length: :mod:`hybridtree.analysis.halos.fof`;
- groups of at least ``FOF_GROUP_MIN_LEN`` particles, ordered by length (descending), ties
  by the smallest particle ID in the group (ascending);
- ``GroupPos``: the centre of mass (comoving), ``GroupMass`` the summed mass, in the
  snapshot's units;
- ``GroupVel``: the mass-weighted mean of GADGET-4's internal velocity a² dx/dt, written
  without conversion: GroupVel = a · v_pec = a^(3/2) · u (so v_pec = GroupVel / a);
- the catalogue file: ``Header`` (Ngroups_/Nsubhalos_/Nids_ ThisFile and Total as uint64,
  ``NumFiles`` int32, ``Time``, ``Redshift``, ``BoxSize`` float64), ``Parameters``,
  ``Config`` (compile-time options: a flag is an empty string, a valued option a double),
  ``Group`` (GroupLen and GroupLenType int32, GroupMass, GroupMassType, GroupPos,
  GroupVel, GroupAscale float: float64 here, GADGET-4's ``OUTPUT_IN_DOUBLEPRECISION``).

Additions of hybridtree (GADGET-4 writes neither): ``IDs/ID`` (uint64), the particle IDs of
the members, group after group, ascending ID within a group (the order of GADGET-4's FOF
ID list without SUBFIND), so that group i is ``ID[off_i : off_i + GroupLen_i]`` with
``off`` the running sum of ``GroupLen``; a ``Units`` group and ``HubbleParam``, ``Omega0``,
``OmegaLambda`` and ``LinkingLength`` in ``Header`` (the first three where GADGET-2/3-era
readers such as yt's look for them).  ``GroupOffsetType`` (offsets into a snapshot stored in
group order) is not written: hybridtree's snapshots are not in group order.
"""

from __future__ import annotations

import math
import re
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Mapping

import h5py
import numpy as np

from ...errors import UserInputError
from ...io.hdf5_files import attr_number, attr_value
from ...io.snapshot import N_TYPES, SnapshotError, resolve_snapshot, snapshot_files
from ...config.units import MPC_CM, MSUN_G
from .fof import FOF_CHUNK, all_finite, friends_of_friends, linking_length

__all__ = ["HaloCatalogue", "find_halos", "snapshot_number"]


# --------------------------------------------------------------------------------------
# the catalogue

@dataclass
class HaloCatalogue:
    """FOF groups of a snapshot, ordered by length (descending), then by the smallest
    particle ID (ascending), in the snapshot's units:

    - ``group_len`` (int64): particles per group; ``group_len_type`` (n, 6) per PartType;
    - ``group_mass`` (UnitMass/h; M for a non-cosmological file), ``group_mass_type``;
    - ``group_pos`` (n, 3): centre of mass, comoving, UnitLength/h;
    - ``group_vel`` (n, 3): GADGET-4's GroupVel, a · (mass-weighted mean peculiar velocity)
      in UnitVelocity (= a^(3/2) × the mean of the snapshot's ``Velocities``);
    - ``ids`` (uint64): the members' ParticleIDs, group after group, ascending within a
      group; ``offsets`` (int64): where each group starts in ``ids``;
    - ``link``: the linking length used (comoving UnitLength/h), ``b`` the factor of the
      mean separation that gave it (None when ``link`` was given), ``min_len``;
    - from the snapshot: ``time`` (Header/Time: a, or the time of a non-cosmological
      file), ``redshift``, ``hubble_param``, ``omega0``, ``omega_lambda``, ``box_size``,
      ``cosmological``, ``n_particles`` (all particles searched), ``snapshot`` (its first
      file), ``number`` (the snapshot number, None if unknown), ``units`` (the ``Units``
      group's attributes) and ``parameters`` (``Parameters``).
    """

    group_len: np.ndarray
    group_len_type: np.ndarray
    group_mass: np.ndarray
    group_mass_type: np.ndarray
    group_pos: np.ndarray
    group_vel: np.ndarray
    ids: np.ndarray
    offsets: np.ndarray
    link: float
    b: float | None
    min_len: int
    time: float
    redshift: float
    hubble_param: float
    omega0: float
    omega_lambda: float
    box_size: float
    cosmological: bool
    n_particles: int
    snapshot: Path | None = None
    number: int | None = None
    units: dict[str, Any] = field(default_factory=dict)
    parameters: dict[str, Any] = field(default_factory=dict)

    def __len__(self) -> int:
        return len(self.group_len)

    @property
    def scale_factor(self) -> float:
        """a (1 for a non-cosmological file)."""
        return self.time if self.cosmological else 1.0

    def members(self, i: int) -> np.ndarray:
        """ParticleIDs of group ``i``."""
        return self.ids[self.offsets[i]:self.offsets[i] + self.group_len[i]]

    def peculiar_velocity(self) -> np.ndarray:
        """(n, 3) mass-weighted mean peculiar velocities in UnitVelocity: GroupVel / a."""
        return self.group_vel / self.scale_factor

    def masses_msun_h(self) -> np.ndarray:
        """``group_mass`` in M☉/h (in M☉ for a non-cosmological file, whose h is 1)."""
        return self.group_mass * float(self.units.get("UnitMass_in_g", math.nan)) / MSUN_G

    @property
    def unit_length_mpc_h(self) -> float:
        """One comoving UnitLength/h of ``group_pos`` (and ``link``) in comoving Mpc/h."""
        return float(self.units.get("UnitLength_in_cm", math.nan)) / MPC_CM


_NUMBER_RE = re.compile(r"_(\d+)(?:\.\d+)?\.hdf5$")


def snapshot_number(path: Path, run_state: Mapping[str, Any]) -> int | None:
    """The number of the snapshot ``path``: from its name ``..._NNNN[.K].hdf5``, else
    ``RunState/SnapshotNumber`` (``run_state``); None if neither says."""
    m = _NUMBER_RE.search(path.name)
    if m:
        return int(m.group(1))
    if "SnapshotNumber" in run_state:
        return int(run_state["SnapshotNumber"])
    return None


def _read_snapshot(path: str | Path) -> dict[str, Any]:
    """Every PartType of every file of the snapshot at ``path``, as stored (comoving
    positions etc.), and its header, units, parameters, run state."""
    files = snapshot_files(path)
    pos, vel, mass, ids, ptype = [], [], [], [], []
    info: dict[str, Any] = {}
    for i, q in enumerate(files):
        try:
            f = h5py.File(q, "r")
        except OSError as exc:
            raise SnapshotError(f"{q}: not a readable HDF5 file ({exc})") from None
        with f:
            header = f["Header"].attrs if "Header" in f else {}
            if i == 0:
                info = {
                    "header": {k: attr_value(v) for k, v in header.items()},
                    "units": ({k: attr_value(v) for k, v in f["Units"].attrs.items()}
                              if "Units" in f else {}),
                    "parameters": ({k: attr_value(v) for k, v in f["Parameters"].attrs.items()}
                                   if "Parameters" in f else {}),
                    "run_state": ({k: attr_value(v) for k, v in f["RunState"].attrs.items()}
                                  if "RunState" in f else {}),
                }
                for key in ("UnitLength_in_cm", "UnitMass_in_g", "UnitVelocity_in_cm_per_s"):
                    if key not in info["units"]:
                        for where in (header, info["parameters"]):
                            if key in where:
                                info["units"][key] = attr_number(where, key, math.nan)
                                break
            table = np.zeros(N_TYPES)
            if "MassTable" in header:
                table[:] = np.asarray(header["MassTable"], np.float64).reshape(-1)[:N_TYPES]
            for t in range(N_TYPES):
                name = f"PartType{t}"
                if name not in f:
                    continue
                g = f[name]
                if "Coordinates" not in g:
                    raise SnapshotError(f"{q}: {name} has no Coordinates")
                x = np.asarray(g["Coordinates"][...], np.float64)
                if x.ndim != 2 or x.shape[1] != 3:
                    raise SnapshotError(f"{q}: {name}/Coordinates has shape {x.shape}")
                n = len(x)
                v = (np.asarray(g["Velocities"][...], np.float64) if "Velocities" in g
                     else np.zeros((n, 3)))
                if "Masses" in g:
                    m = np.asarray(g["Masses"][...], np.float64)
                elif table[t] > 0:
                    m = np.full(n, table[t])
                else:
                    raise SnapshotError(f"{q}: {name} has no Masses and no MassTable entry")
                if "ParticleIDs" in g:
                    pid = np.asarray(g["ParticleIDs"][...]).astype(np.uint64, copy=False)
                else:
                    pid = None
                for key, arr, shape in (("Velocities", v, (n, 3)), ("Masses", m, (n,)),
                                        ("ParticleIDs", pid, (n,))):
                    if arr is not None and arr.shape != shape:
                        raise SnapshotError(f"{q}: {name}/{key} has shape {arr.shape}, "
                                            f"expected {shape}")
                pos.append(x)
                vel.append(v)
                mass.append(m)
                ids.append(pid)
                ptype.append(np.full(n, t, np.int8))
    if not pos:
        raise SnapshotError(f"{path}: no PartType groups: not a GADGET-style snapshot")
    total = sum(len(x) for x in pos)
    if any(p is None for p in ids):         # GADGET: IDs 1.. by row when none are stored
        ids = [np.arange(1, total + 1, dtype=np.uint64)]

    def joined(blocks: list[np.ndarray]) -> np.ndarray:
        return blocks[0] if len(blocks) == 1 else np.concatenate(blocks)   # no copy of one
    out = {"pos": joined(pos), "vel": joined(vel), "mass": joined(mass), "ids": joined(ids),
           "type": joined(ptype), "files": files, **info}
    for key in ("pos", "vel", "mass"):
        if not all_finite(out[key]):
            raise SnapshotError(f"{path}: non-finite values in the particles' {key}")
    return out


def _id_order(ids: np.ndarray) -> np.ndarray:
    """The order of ascending ``ids``, ties in their given order: numpy's quicksort (its
    SIMD sort) where the IDs are unique, as a snapshot's are, else a stable sort."""
    order = np.argsort(ids)
    ordered = ids[order]
    if len(ids) > 1 and np.any(ordered[1:] == ordered[:-1]):
        order = np.argsort(ids, kind="stable")
    return order


def find_halos(path: str | Path, b: float = 0.2, min_len: int = 20,
               link: float | None = None, chunk: int = FOF_CHUNK,
               runtime: Any = None) -> HaloCatalogue:
    """The FOF groups of the snapshot at ``path`` (a file, any part of a multi-file set, or
    a stem: :func:`hybridtree.io.snapshot.snapshot_files`), every PartType linked.

    Linking length: ``link`` (comoving, in the file's length unit UnitLength/h) if given,
    else for a cosmological file (``Header/Omega0`` > 0, ``HubbleParam``) ``b`` times the
    mean comoving separation (mean particle mass / (Ω_m ρ_crit,0))^(1/3)
    (:func:`mean_separation`, in cgs from the file's ``UnitMass_in_g`` and
    ``UnitLength_in_cm``; meant for particles of equal mass, as GADGET-4 takes the mean
    mass).  A non-cosmological file needs ``link``.  Groups of fewer than ``min_len``
    particles are dropped.  A periodic box (``BoxSize`` > 0) links across its faces, and a
    group's centre is the mean of its members' nearest images (wrapped into the box).
    ``runtime``: an OpenCL runtime to link on (:mod:`hybridtree.analysis.halos.fof_device`:
    the same groups but for pairs within ~1e-6 of the linking length; ``hybridtree halos``
    passes the device ``hybridtree pk`` would use), else the host's k-d trees.
    Returns a :class:`HaloCatalogue`.
    """
    if min_len < 1:
        raise UserInputError(f"min_len must be >= 1, not {min_len}")
    snap = _read_snapshot(path)
    header, units = snap["header"], snap["units"]
    box = attr_number(header, "BoxSize", 0.0)
    omega0 = attr_number(header, "Omega0", 0.0)
    h = attr_number(header, "HubbleParam", math.nan)
    cosmological = omega0 > 0 and h > 0
    time = attr_number(header, "Time", 0.0)
    if cosmological and not time > 0:
        raise SnapshotError(f"{path}: Header/Time (the scale factor) is {time}")
    if link is None:
        if not cosmological:
            raise SnapshotError(f"{path} is not cosmological (no Header/Omega0 > 0 and "
                                f"HubbleParam), so -b has no mean separation to scale: give the "
                                f"linking length in the file's length unit (hybridtree halos "
                                f"--link LENGTH; find_halos(..., link=LENGTH))")
        for key in ("UnitLength_in_cm", "UnitMass_in_g"):
            if not units.get(key, 0) > 0:
                raise SnapshotError(f"{path}: no {key} (Units group): cannot convert the "
                                    f"mean separation to the file's units")
        mean_mass = float(np.mean(snap["mass"]))
        link = linking_length(b, mean_mass, omega0, h, float(units["UnitMass_in_g"]),
                              float(units["UnitLength_in_cm"]))
        used_b: float | None = float(b)
    else:
        used_b = None
    a = time if cosmological else 1.0
    labels = friends_of_friends(snap["pos"], link, chunk=chunk, box=box if box > 0 else None,
                                runtime=runtime)
    cat = _catalogue(labels, snap, min_len, a ** 1.5, box if box > 0 else None)
    return HaloCatalogue(
        **cat, link=float(link), b=used_b, min_len=int(min_len), time=time,
        redshift=attr_number(header, "Redshift", 1.0 / a - 1.0 if cosmological else 0.0),
        hubble_param=h if cosmological else attr_number(header, "HubbleParam", 1.0),
        omega0=omega0, omega_lambda=attr_number(header, "OmegaLambda", 0.0), box_size=box,
        cosmological=cosmological, n_particles=len(labels), snapshot=snap["files"][0],
        number=snapshot_number(snap["files"][0], snap["run_state"]), units=units,
        parameters=snap["parameters"])


def _catalogue(labels: np.ndarray, snap: Mapping[str, np.ndarray], min_len: int,
               vel_factor: float, box: float | None = None) -> dict[str, np.ndarray]:
    """Group properties of the groups of ``labels`` with >= ``min_len`` members."""
    ids, mass = snap["ids"], snap["mass"]
    counts = np.bincount(labels)
    keep = counts >= min_len
    sel = np.flatnonzero(keep[labels])
    # the members in ascending ID (ties, which a snapshot should not have, by row), then
    # the groups by length (descending) and smallest ID (ascending, GADGET-4), and the
    # members group after group by a stable sort on the group's new number (ID order kept)
    sel = sel[_id_order(ids[sel])]
    lab = labels[sel]
    group_labels = np.flatnonzero(keep)
    min_id = np.full(len(counts), np.iinfo(np.uint64).max, np.uint64)
    np.minimum.at(min_id, lab, ids[sel].astype(np.uint64, copy=False))
    min_id = min_id[group_labels]
    lens = counts[group_labels]
    rank = np.lexsort((min_id, -lens))              # new order of the groups
    new_number = np.zeros(len(counts), np.int64)
    new_number[group_labels[rank]] = np.arange(len(rank))
    member_group = new_number[lab]
    # int16/uint16 keys are sorted by radix (O(N)); more groups than that take a merge sort
    small = np.uint16 if len(rank) <= np.iinfo(np.uint16).max + 1 else np.int64
    order = np.argsort(member_group.astype(small), kind="stable")
    members = sel[order]
    lens = lens[rank]
    offsets = np.zeros(len(lens), np.int64)
    if len(lens):
        offsets[1:] = np.cumsum(lens)[:-1]
    n = len(lens)
    m = mass[members]
    gmass = np.add.reduceat(m, offsets) if n else np.zeros(0)
    # centre of mass relative to each group's first member (smallest ID): no cancellation
    ref = snap["pos"][members[offsets]] if n else np.zeros((0, 3))
    gid = np.repeat(np.arange(n), lens)
    rel = snap["pos"][members] - ref[gid]
    if box is not None:             # each member's image nearest to the first
        rel -= box * np.round(rel / box)
    safe = np.where(gmass > 0, gmass, 1.0)[:, None]
    pos = ref + (np.add.reduceat(m[:, None] * rel, offsets) if n else np.zeros((0, 3))) / safe
    if box is not None:
        pos = np.mod(pos, box)
    vel = (np.add.reduceat(m[:, None] * snap["vel"][members], offsets) / safe if n
           else np.zeros((0, 3)))
    types = snap["type"][members]
    # per group and type; bincount adds in member order, as np.add.at did (same bits)
    cell = gid * N_TYPES + types
    len_type = np.bincount(cell, minlength=n * N_TYPES).astype(np.int64).reshape(n, N_TYPES)
    mass_type = np.bincount(cell, weights=m, minlength=n * N_TYPES).reshape(n, N_TYPES)
    return {"group_len": lens.astype(np.int64), "group_len_type": len_type,
            "group_mass": gmass, "group_mass_type": mass_type, "group_pos": pos,
            "group_vel": vel * vel_factor, "ids": ids[members].astype(np.uint64),
            "offsets": offsets}
