"""GADGET files of a code compiled with NTYPES other than 6 (GADGET-4's NTYPES = 2 for dark
matter alone, its N-GenIC output among them; 7 with a type hybridtree has not): read
wherever GADGET files are read (``ics.kind = "file"``, ``"box_file"``, ``hybridtree info``),
each particle keeping its type; particles of a type beyond PartType5 refused in one line.
The reference is the same particles in a 6-type file, read by the path the other tests
check against worked-out values."""

from __future__ import annotations

from pathlib import Path

import h5py
import numpy as np
import pytest

from hybridtree.cli import main
from hybridtree.config.units import MPC_CM, Units
from hybridtree.io.box_ics import box_ics_count, read_box_ics
from hybridtree.io.hdf5_files import SnapshotError
from hybridtree.io.snapshot import count_particles, read_particles, read_snapshot
from tests.helpers import one_error_line

ROOT = Path(__file__).resolve().parents[2]
UNITS = Units(MPC_CM, 1.98841e43)
A, BOX, H, DM_MASS = 0.5, 50.0, 0.7, 0.125
MPC_H = 3.085678e24
COSMO = {"Omega0": 0.3, "OmegaLambda": 0.7, "HubbleParam": H}
#: a run of one step from a = 0.5 in the file's cosmology (Mpc, 1e10 Msun)
COSMO_RUN = ["--quiet", "--set", "cosmology.enabled=true", "--set", "cosmology.z_start=1.0",
             "--set", "cosmology.z_end=0.95", "--set", "cosmology.steps=1",
             "--set", "cosmology.omega_m=0.3", "--set", "cosmology.omega_lambda=0.7",
             "--set", "cosmology.h=0.7", "--set", "output.redshifts=",
             "--set", f"units.length_cm={MPC_CM!r}", "--set", "units.mass_g=1.98841e43"]


def gadget4_file(path: Path, ntypes: int, counts: dict[int, int], *, seed: int = 1,
                 high_word: int | None = None, n_files: int = 1,
                 total: list[int] | None = None) -> None:
    """A file as GADGET-4 compiled with ``ntypes`` types writes it (its N-GenIC's ICs):
    NTYPES entries in NumPart_ThisFile, NumPart_Total and MassTable, the dark matter's
    mass in MassTable[1] (no Masses), other types with Masses; units and cosmology in
    Parameters (Mpc/h, 1e10 Msun/h, km/s); ``high_word``: a NumPart_Total_HighWord of that
    many entries (GADGET-4 writes none); ``counts``: type -> particles of this file."""
    rng = np.random.default_rng(seed)
    this = np.zeros(ntypes, np.int64)
    for t, n in counts.items():
        this[t] = n
    with h5py.File(path, "w") as f:
        h = f.create_group("Header").attrs
        h["NumPart_ThisFile"] = this.astype(np.int32)
        h["NumPart_Total"] = np.array(this if total is None else total, np.uint64)
        if high_word is not None:
            h["NumPart_Total_HighWord"] = np.zeros(high_word, np.uint32)
        table = np.zeros(ntypes)
        table[1:2] = DM_MASS
        h["MassTable"] = table
        h["Time"], h["Redshift"], h["BoxSize"] = A, 1 / A - 1, BOX
        h["NumFilesPerSnapshot"] = n_files
        p = f.create_group("Parameters").attrs
        p.update(COSMO)
        p["UnitLength_in_cm"], p["UnitMass_in_g"] = MPC_H, 1.989e43
        p["UnitVelocity_in_cm_per_s"], p["ComovingIntegrationOn"] = 1e5, 1
        for t, n in counts.items():
            g = f.create_group(f"PartType{t}")
            g["Coordinates"] = rng.uniform(0, BOX, (n, 3))
            g["Velocities"] = rng.normal(0, 20, (n, 3))
            first = 1000 * t + 100 * (seed - 1) + 1         # unique over a set's files
            g["ParticleIDs"] = np.arange(first, first + n, dtype=np.uint64)
            if t != 1:
                g["Masses"] = rng.uniform(0.01, 0.02, n)


def same(a, b) -> None:
    for key in ("pos", "vel", "mass", "ids", "types"):
        assert np.array_equal(getattr(a, key), getattr(b, key)), key


@pytest.mark.parametrize("ntypes, counts", [(1, {0: 20}), (2, {1: 64}), (2, {0: 5, 1: 64}),
                                            (7, {1: 64}), (7, {0: 5, 1: 64, 6: 0})])
def test_a_file_of_any_ntypes_reads_as_its_six_type_twin(tmp_path, ntypes, counts):
    gadget4_file(tmp_path / "odd.hdf5", ntypes, counts)
    gadget4_file(tmp_path / "six.hdf5", 6, {t: n for t, n in counts.items() if t < 6})
    odd, six = (read_box_ics(tmp_path / f"{k}.hdf5", UNITS) for k in ("odd", "six"))
    same(odd, six)
    n = sum(counts.values())
    assert len(six.ids) == n
    assert len(odd.ids) == n and box_ics_count(tmp_path / "odd.hdf5") == n
    # the dark matter's mass from MassTable[1]: m M / h, worked out here
    dm = odd.types == 1
    np.testing.assert_allclose(odd.mass[dm], DM_MASS * 1.989e43 / H / UNITS.mass_g, rtol=1e-14)
    assert sorted(np.unique(odd.types)) == [t for t in sorted(counts) if counts[t]]
    (p, t, _), (q, s, _) = (read_particles(tmp_path / f"{k}.hdf5", "all", UNITS)
                            for k in ("odd", "six"))
    same(p, q)
    assert t == s and count_particles(tmp_path / "odd.hdf5") == n


@pytest.mark.parametrize("high_word", [1, 2, 6, 7])
def test_a_two_file_ntypes_2_set_with_a_high_word_of_any_length(tmp_path, high_word):
    for k in range(2):
        gadget4_file(tmp_path / f"ics.{k}.hdf5", 2, {1: 30 + k}, seed=k + 1, n_files=2,
                     total=[0, 61], high_word=high_word)
        gadget4_file(tmp_path / f"six.{k}.hdf5", 6, {1: 30 + k}, seed=k + 1, n_files=2,
                     total=[0, 61, 0, 0, 0, 0])
    same(read_box_ics(tmp_path / "ics", UNITS), read_box_ics(tmp_path / "six", UNITS))
    assert box_ics_count(tmp_path / "ics") == 61
    (p, _, _), (q, _, _) = (read_particles(tmp_path / f"{k}.0.hdf5", "all", UNITS)
                            for k in ("ics", "six"))
    same(p, q)


def test_the_high_word_adds_the_upper_32_bits_whatever_its_length():
    from hybridtree.io.hdf5_files import header_counts
    header = {"NumPart_Total": np.array([3, 5], np.uint32),
              "NumPart_Total_HighWord": np.array([0, 2, 0, 0, 0, 0], np.uint32)}
    assert header_counts("f", header, "NumPart_Total").tolist() == [3, 2 * 2 ** 32 + 5, 0, 0,
                                                                     0, 0]
    header["NumPart_Total_HighWord"] = np.array([1], np.uint32)
    assert header_counts("f", header, "NumPart_Total")[:2].tolist() == [2 ** 32 + 3, 5]
    # a low word written as a signed 32-bit int: 2^31 + 1 particles read back as -2^31 + 1
    header["NumPart_Total"] = np.array([3, 2 ** 31 + 1], np.uint32).view(np.int32)
    assert header_counts("f", header, "NumPart_Total")[:2].tolist() == [2 ** 32 + 3,
                                                                        2 ** 31 + 1]
    # GADGET-4's 64-bit totals: a high word repeating their upper half adds nothing
    header = {"NumPart_Total": np.array([0, 2 ** 33 + 7], np.uint64),
              "NumPart_Total_HighWord": np.array([0, 2], np.uint32)}
    assert header_counts("f", header, "NumPart_Total")[1] == 2 ** 33 + 7
    header["NumPart_Total_HighWord"] = np.array([0, 1], np.uint32)
    with pytest.raises(SnapshotError, match="disagree"):
        header_counts("f", header, "NumPart_Total")
    header["NumPart_Total_HighWord"] = np.array([0, 0, 4], np.uint32)
    with pytest.raises(SnapshotError, match="beyond NumPart_Total's 2 types"):
        header_counts("f", header, "NumPart_Total")


@pytest.mark.parametrize("extra", ["counted", "group only"])
def test_particles_of_type_6_are_refused_in_one_line(tmp_path, extra):
    path = tmp_path / "n7.hdf5"
    gadget4_file(path, 7, {1: 64, 6: 5})
    needle = "Header/NumPart_ThisFile[6] = 5"
    if extra == "group only":       # a PartType6 group the header's counts do not list
        with h5py.File(path, "a") as f:
            for key in ("NumPart_ThisFile", "NumPart_Total"):
                f["Header"].attrs[key] = f["Header"].attrs[key][:6]
        needle = "PartType6/Coordinates rows = 5"
    for read in (lambda: read_box_ics(path, UNITS), lambda: box_ics_count(path),
                 lambda: read_particles(path, "all", UNITS), lambda: count_particles(path),
                 lambda: read_snapshot(path)):
        with pytest.raises(SnapshotError) as exc:
            read()
        assert needle in str(exc.value) and "types 0 .. 5" in str(exc.value), exc.value


CONFIG = "[ics]\nkind = \"file\"\nfile = \"ics.hdf5\"\n[gravity]\neps = 0.5\n"


def test_the_command_line_reads_ntypes_2_and_refuses_type_6(here, capsys):
    gadget4_file(here / "ics.hdf5", 2, {1: 64})
    assert main(["info", "ics.hdf5"]) == 0
    assert "particles: 64 PartType1 (total 64)" in capsys.readouterr().out
    assert main(["run", "c.toml", *COSMO_RUN, "--set", "output.dir=file"]) == 0
    s = read_snapshot(here / "file" / "snapshot_0000.hdf5")
    assert len(s.particles.ids) == 64 and set(s.particles.types) == {1}
    (here / "box.toml").write_text((ROOT / "configs" / "cosmo_box_small.toml").read_text())
    box = ["run", "box.toml", *COSMO_RUN, "--set", "ics.kind=box_file", "--set",
           "ics.file=ics.hdf5", "--set", "gravity.pm_grid=32"]
    assert main(box + ["--set", "output.dir=box"]) == 0
    s = read_snapshot(here / "box" / "snapshot_0000.hdf5")
    assert sorted(s.particles.ids.tolist()) == list(range(1001, 1065))
    capsys.readouterr()
    gadget4_file(here / "ics.hdf5", 7, {1: 64, 6: 5})
    for args in (["info", "ics.hdf5"], ["run", "c.toml", *COSMO_RUN, "--set", "output.dir=f7"],
                 box + ["--set", "output.dir=b7"]):
        assert main(args) == 2
        one_error_line(capsys, "ics.hdf5", "Header/NumPart_ThisFile[6] = 5", "types 0 .. 5")
    assert not (here / "f7").exists() and not (here / "b7").exists()
    gadget4_file(here / "ics.hdf5", 7, {1: 64, 6: 0})
    assert main(box + ["--set", "output.dir=b7z"]) == 0
    assert main(["info", "ics.hdf5"]) == 0


def test_load_yt_refuses_type_6_in_one_line(tmp_path):
    """yt's GADGET frontend knows six types: a file with particles of type 6 is told as
    such, not yt's IndexError."""
    pytest.importorskip("yt")
    from hybridtree.io import load_yt
    gadget4_file(tmp_path / "n7.hdf5", 7, {1: 64, 6: 5})
    with pytest.raises(SnapshotError, match=r"NumPart_ThisFile\[6\] = 5"):
        load_yt(tmp_path / "n7.hdf5")
