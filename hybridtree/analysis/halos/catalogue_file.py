"""GADGET-4's FOF catalogue file ``fof_tab_NNN.hdf5`` of a :class:`HaloCatalogue`:
:func:`write_catalogue` (the layout: :mod:`hybridtree.analysis.halos.catalogue`)."""

from __future__ import annotations

import os
from pathlib import Path
from typing import Any, Mapping

import h5py
import numpy as np

from ...errors import UserInputError
from ...io.hdf5_files import attr_value
from ...io.snapshot import N_TYPES, atomic_path, resolve_snapshot
from .catalogue import HaloCatalogue, snapshot_number

__all__ = ["catalogue_name", "write_catalogue"]


def catalogue_name(number: int) -> str:
    """GADGET-4's name of the FOF catalogue of snapshot ``number``: ``fof_tab_NNN.hdf5``."""
    return f"fof_tab_{int(number):03d}.hdf5"


def write_catalogue(path_out: str | Path, catalogue: HaloCatalogue,
                    header_from: str | Path | None = None, overwrite: bool = False) -> Path:
    """Write ``catalogue`` in GADGET-4's FOF layout (module docstring), atomically (a
    temporary name beside the file, then a rename); return the file's path.

    ``path_out``: a folder (the file is ``fof_tab_NNN.hdf5`` there, NNN the snapshot
    number: from the snapshot's name ``..._NNNN[.K].hdf5``, else ``RunState/SnapshotNumber``)
    or a file name.  ``header_from``: the snapshot (file or stem) whose ``Parameters`` and
    ``Units`` are copied (default: ``catalogue.snapshot``; the catalogue's own values where
    there is none).  FileExistsError if the file exists and ``overwrite`` is false.
    """
    path_out = Path(path_out)
    source = header_from if header_from is not None else catalogue.snapshot
    parameters, units, number = dict(catalogue.parameters), dict(catalogue.units), catalogue.number
    if source is not None:
        first = resolve_snapshot(source)
        with h5py.File(first, "r") as f:
            if "Parameters" in f:
                parameters = {k: v for k, v in f["Parameters"].attrs.items()}
            if "Units" in f:
                units = {k: v for k, v in f["Units"].attrs.items()}
            state = ({k: attr_value(v) for k, v in f["RunState"].attrs.items()}
                     if "RunState" in f else {})
        number = snapshot_number(first, state)
        if number is None:
            number = catalogue.number
    if path_out.is_dir():
        if number is None:
            raise UserInputError(f"the snapshot number of {source} is unknown (not in its "
                                 f"name nor RunState), so a catalogue in the folder "
                                 f"{path_out} has no fof_tab_NNN.hdf5 name: give the "
                                 f"catalogue's file name (hybridtree halos -o FILE)")
        path_out = path_out / catalogue_name(number)
    if path_out.exists() and not overwrite:
        raise FileExistsError(f"{path_out} exists (use --overwrite to replace it)")
    tmp = atomic_path(path_out)
    try:
        with h5py.File(tmp, "w") as f:
            _write_catalogue(f, catalogue, parameters, units)
        os.replace(tmp, path_out)
    except BaseException:
        tmp.unlink(missing_ok=True)
        raise
    return path_out


def _write_catalogue(f: h5py.File, cat: HaloCatalogue, parameters: Mapping[str, Any],
                     units: Mapping[str, Any]) -> None:
    n, nids = len(cat), len(cat.ids)
    h = f.create_group("Header").attrs
    for key, value in (("Ngroups_ThisFile", n), ("Nsubhalos_ThisFile", 0),
                       ("Nids_ThisFile", nids), ("Ngroups_Total", n), ("Nsubhalos_Total", 0),
                       ("Nids_Total", nids)):
        h[key] = np.uint64(value)
    h["NumFiles"] = np.int32(1)
    h["Time"] = np.float64(cat.time)
    h["Redshift"] = np.float64(cat.redshift)
    h["BoxSize"] = np.float64(cat.box_size)
    h["HubbleParam"] = np.float64(cat.hubble_param)
    h["Omega0"] = np.float64(cat.omega0)
    h["OmegaLambda"] = np.float64(cat.omega_lambda)
    h["LinkingLength"] = np.float64(cat.link)

    p = f.create_group("Parameters").attrs
    for k, v in parameters.items():
        p[k] = v
    # GADGET-4's own names of what a reader needs, where the snapshot's parameters lack them
    for k, v in (("HubbleParam", cat.hubble_param), ("Omega0", cat.omega0),
                 ("OmegaLambda", cat.omega_lambda), ("BoxSize", cat.box_size),
                 *((key, units[key]) for key in ("UnitLength_in_cm", "UnitMass_in_g",
                                                 "UnitVelocity_in_cm_per_s") if key in units)):
        if k not in p:
            p[k] = np.float64(v)

    c = f.create_group("Config").attrs
    for flag in ("FOF", "IDS_64BIT", "OUTPUT_IN_DOUBLEPRECISION"):
        c[flag] = np.bytes_(b"")
    if cat.b is not None:
        c["FOF_LINKLENGTH"] = np.float64(cat.b)
    c["FOF_GROUP_MIN_LEN"] = np.float64(cat.min_len)
    c["NTYPES"] = np.float64(N_TYPES)

    g = f.create_group("Group")
    wide = len(cat.group_len) and int(cat.group_len.max()) >= 2 ** 31   # FOF_ALLOW_HUGE_...
    len_dtype = np.int64 if wide else np.int32
    g.create_dataset("GroupLen", data=cat.group_len.astype(len_dtype))
    g.create_dataset("GroupLenType", data=cat.group_len_type.astype(len_dtype).reshape(n, N_TYPES))
    g.create_dataset("GroupMass", data=cat.group_mass.astype(np.float64))
    g.create_dataset("GroupMassType", data=cat.group_mass_type.astype(np.float64)
                     .reshape(n, N_TYPES))
    g.create_dataset("GroupPos", data=cat.group_pos.astype(np.float64).reshape(n, 3))
    g.create_dataset("GroupVel", data=cat.group_vel.astype(np.float64).reshape(n, 3))
    g.create_dataset("GroupAscale", data=np.full(n, cat.scale_factor))
    f.create_group("IDs").create_dataset("ID", data=cat.ids.astype(np.uint64))

    u = f.create_group("Units").attrs
    for k, v in units.items():
        u[k] = v
