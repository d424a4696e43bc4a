"""Files a user brings with a mistake in them end in one line naming the file, the attribute
or dataset and the bad value (exit 2, no traceback) -- from ``hybridtree info``, from a
run's ``ics.kind = "file"`` and ``"box_file"`` -- and nothing is written: a negative or NaN
unit, a NaN time, a string particle count, negative particle IDs, and a GADGET-2 binary
header claiming more particles than the file holds (its block sizes, not a memory
estimate for particles that are not there).  The command line runs in this process
(:func:`hybridtree.cli.main`), and as ``python -m hybridtree`` where the exit status and
the absence of a traceback are the point (the cases that ended in one before)."""

from __future__ import annotations

import os
import struct
import subprocess
import sys
from pathlib import Path

import h5py
import numpy as np
import pytest

from hybridtree.cli import main
from hybridtree.config.units import Units
from hybridtree.ics import plummer
from hybridtree.io.gadget_binary import write_gadget2, write_gadget2_snapshot
from hybridtree.io.snapshot import write_snapshot
from hybridtree.particles import Particles
from tests.helpers import one_error_line, run_config

ROOT = Path(__file__).resolve().parents[2]
UNITS = Units(3.0856775814913673e21, 1.98841e43)
CONFIG_FILES = {"small.toml": run_config(64, 1, 0.6, 2, 1, 1),
                "box.toml": (ROOT / "configs" / "cosmo_box_small.toml").read_text()}
#: a periodic run from a = 1/50 of 8^3 particles in the box of cosmo_box_small.toml
BOX_RUN = ["--set", "ics.kind=box_file", "--set", "ics.file=box.hdf5", "--set",
           "cosmology.steps=1", "--set", "cosmology.z_end=48", "--set", "output.redshifts="]


def cli(*args: str) -> subprocess.CompletedProcess:
    """``python -m hybridtree ARGS`` in the working directory, this checkout's code."""
    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    return subprocess.run([sys.executable, "-m", "hybridtree", *args], capture_output=True,
                          text=True, env=env, timeout=300)


def refused(done: subprocess.CompletedProcess, *needles: str) -> None:
    """Exit 2 and one line ``hybridtree: error: ...`` holding every needle, no traceback."""
    err = done.stderr
    assert done.returncode == 2, (done.returncode, err)
    assert err.count("\n") == 1 and err.startswith("hybridtree: error: "), err
    assert "Traceback" not in err
    for needle in needles:
        assert needle in err, err


def ic_file(path: Path) -> None:
    """A hybridtree IC file (a Units group, G = 1) of a 64-particle Plummer sphere."""
    pos, vel, mass = plummer(64, seed=2)
    write_snapshot(path, Particles(pos, vel, mass, np.arange(1, 65, dtype=np.uint64)), 0.0,
                   UNITS)


def box_file(path: Path) -> None:
    """A GADGET-4-style periodic box at a = 1/50 in cosmo_box_small.toml's cosmology."""
    rng = np.random.default_rng(4)
    with h5py.File(path, "w") as f:
        h = f.create_group("Header").attrs
        h["NumPart_ThisFile"] = h["NumPart_Total"] = np.array([0, 512, 0, 0, 0, 0], np.uint32)
        h["MassTable"] = np.array([0, 4.0, 0, 0, 0, 0])
        h["Time"], h["Redshift"], h["BoxSize"], h["NumFilesPerSnapshot"] = 0.02, 49.0, 1e5, 1
        p = f.create_group("Parameters").attrs
        p["Omega0"], p["OmegaLambda"], p["HubbleParam"] = 0.3, 0.7, 0.7
        g = f.create_group("PartType1")
        g["Coordinates"] = rng.uniform(0, 1e5, (512, 3))
        g["Velocities"] = rng.normal(0, 10, (512, 3))
        g["ParticleIDs"] = np.arange(1, 513, dtype=np.int64)


def spoil(path: Path, where: str, key: str | None, value) -> None:
    """Set attribute ``where/key`` (or, ``key`` None, replace dataset ``where``)."""
    with h5py.File(path, "a") as f:
        if key is not None:
            f[where].attrs[key] = value
        else:
            del f[where]
            f[where] = value


def negative_ids(n: int) -> np.ndarray:
    ids = np.arange(1, n + 1, dtype=np.int64)
    ids[3] = -7
    return ids


HDF5_CASES = {
    "negative unit": ("Units", "UnitLength_in_cm", -1.0, ["Units/UnitLength_in_cm = -1"]),
    "NaN unit": ("Units", "UnitMass_in_g", np.nan, ["Units/UnitMass_in_g = nan"]),
    "NaN time": ("Header", "Time", np.nan, ["Header/Time = nan"]),
    "string count": ("Header", "NumPart_Total", "sixty-four",
                     ["Header/NumPart_Total = 'sixty-four'"]),
    "negative IDs": ("PartType1/ParticleIDs", None, negative_ids(64),
                     ["PartType1/ParticleIDs[3] = -7", "negative"]),
}


@pytest.mark.parametrize("case", list(HDF5_CASES))
def test_a_spoilt_ic_file_is_one_line_from_info_and_run(here, capsys, case):
    where, key, value, needles = HDF5_CASES[case]
    ic_file(here / "ic.hdf5")
    spoil(here / "ic.hdf5", where, key, value)
    assert main(["info", "ic.hdf5"]) == 2
    one_error_line(capsys, "ic.hdf5", *needles)
    assert main(["run", "small.toml", "--quiet", "--set", "ics.kind=file", "--set",
                 "ics.file=ic.hdf5"]) == 2
    one_error_line(capsys, "ic.hdf5", *needles)
    assert not (here / "out").exists()


@pytest.mark.parametrize("case", ["NaN time", "string count", "negative IDs"])
def test_a_spoilt_box_file_is_one_line_from_a_periodic_run(here, capsys, case):
    where, key, value, needles = HDF5_CASES[case]
    box_file(here / "box.hdf5")
    spoil(here / "box.hdf5", where, key, negative_ids(512) if key is None else value)
    assert main(["run", "box.toml", "--quiet", *BOX_RUN]) == 2
    one_error_line(capsys, "box.hdf5", *needles)
    assert main(["info", "box.hdf5"]) == 2
    one_error_line(capsys, "box.hdf5", *needles)
    assert not (here / "out_cosmo_box_small").exists()


def test_the_tracebacks_of_before_are_one_line_and_exit_2(here):
    """As a user runs it: the cases that ended in a traceback (exit 1) or ran on."""
    ic_file(here / "ic.hdf5")
    spoil(here / "ic.hdf5", "Units", "UnitLength_in_cm", -1.0)      # was "math domain error"
    refused(cli("info", "ic.hdf5"), "ic.hdf5", "Units/UnitLength_in_cm = -1")
    box_file(here / "box.hdf5")
    spoil(here / "box.hdf5", "Header", "NumPart_Total", "sixty-four")
    refused(cli("run", "box.toml", "--quiet", *BOX_RUN), "box.hdf5",
            "Header/NumPart_Total = 'sixty-four'")
    box_file(here / "box.hdf5")
    spoil(here / "box.hdf5", "PartType1/ParticleIDs", None, negative_ids(512))  # ran on
    refused(cli("run", "box.toml", "--quiet", *BOX_RUN), "box.hdf5",
            "PartType1/ParticleIDs[3] = -7")
    assert not (here / "out_cosmo_box_small").exists()


def test_a_nan_unit_of_a_gadget4_file_is_named(here, capsys):
    box_file(here / "box.hdf5")
    with h5py.File(here / "box.hdf5", "a") as f:
        p = f["Parameters"].attrs
        p["UnitLength_in_cm"], p["UnitMass_in_g"] = 3.085678e24, np.nan
        p["UnitVelocity_in_cm_per_s"] = 1e5
    assert main(["info", "box.hdf5"]) == 2
    one_error_line(capsys, "box.hdf5", "Parameters/UnitMass_in_g", "nan")
    assert main(["run", "box.toml", "--quiet", *BOX_RUN]) == 2
    one_error_line(capsys, "box.hdf5", "Parameters/UnitMass_in_g", "nan")


def claim(path: Path, fmt: int, n: int) -> None:
    """Let the binary file's header claim ``n`` particles of type 1 (npart, npartTotal)."""
    data = bytearray(path.read_bytes())
    at = 4 + (16 if fmt == 2 else 0)            # the header's start, after its marker(s)
    struct.pack_into("<i", data, at + 4, n)
    struct.pack_into("<I", data, at + 96 + 4, n)
    path.write_bytes(bytes(data))


@pytest.mark.parametrize("fmt", [1, 2])
def test_a_binary_header_claiming_1e9_particles_is_its_block_sizes_not_memory(here, capsys,
                                                                             fmt):
    pos, vel, mass = plummer(64, seed=1)
    [path] = write_gadget2_snapshot(here / "big", pos, vel, mass, np.arange(1, 65), 0.0,
                                    units=UNITS, fmt=fmt)
    claim(path, fmt, 10 ** 9)
    needles = ["big", "POS block holds 1536 bytes", "1000000000 x 3", "inconsistent block"]
    assert main(["info", "big"]) == 2
    one_error_line(capsys, *needles)
    done = cli("run", "small.toml", "--quiet", "--set", "ics.kind=file", "--set", "ics.file=big")
    refused(done, *needles)
    assert "memory" not in done.stderr and not (here / "out").exists()
    x = np.random.default_rng(1).uniform(0, 100, (64, 3))
    write_gadget2(here / "big_box", x, np.zeros_like(x), np.ones(64), np.arange(1, 65),
                  142.85714285714286, 0.02, 0.3, 0.7, 0.7, fmt=fmt,
                  units=Units(3.0856775814913673e24, 1.98841e43))
    claim(here / "big_box", fmt, 10 ** 9)
    assert main(["run", "box.toml", "--quiet", *BOX_RUN[:2], "--set", "ics.file=big_box",
                 *BOX_RUN[4:]]) == 2
    msg = one_error_line(capsys, "big_box", "POS block", "inconsistent block")
    assert "memory" not in msg


def test_a_nan_in_a_binary_header_is_named(here, capsys):
    pos, vel, mass = plummer(64, seed=1)
    [path] = write_gadget2_snapshot(here / "g2", pos, vel, mass, np.arange(1, 65), 0.0,
                                    units=UNITS, fmt=1)
    data = bytearray(path.read_bytes())
    struct.pack_into("<d", data, 4 + 72, np.nan)        # time
    path.write_bytes(bytes(data))
    assert main(["info", "g2"]) == 2
    one_error_line(capsys, "g2", "time = nan")
    assert main(["run", "small.toml", "--quiet", "--set", "ics.kind=file", "--set",
                 "ics.file=g2"]) == 2
    one_error_line(capsys, "g2", "time = nan")
