"""yt as a client of hybridtree's snapshots: physical units (positions, velocities, masses,
time) agree with the file's data times its stored units and with pynbody, for the default
and for non-default units; multi-file sets by any part or the stem; particle plots;
clear errors.  Through :func:`hybridtree.io.load_yt` and, for new snapshots, plain
``yt.load``."""

import sys
import warnings
from pathlib import Path

import h5py
import numpy as np
import pytest

from tests.helpers import run_config
from hybridtree.cli import main
from hybridtree.io import load_yt
from hybridtree.io.snapshot import SnapshotError, read_snapshot, write_snapshot
from hybridtree.particles import Particles
from hybridtree.config.units import Units

yt = pytest.importorskip("yt")
yt.set_log_level(40)
from yt.utilities.object_registries import output_type_registry  # noqa: E402

KPC_CM, PC_CM, MSUN_G = 3.0856775814913673e21, 3.0857e18, 1.98841e33
DEFAULT = Units(KPC_CM, 1e10 * MSUN_G)
PARSEC = Units(PC_CM, 3e5 * MSUN_G)             # 1 pc, 3e5 Msun: 35.9 km/s, 27.2 kyr
N = 300
RTOL = 1e-9


def particles(n: int = N, seed: int = 5, offset: float = 0.0, scale: float = 1.0) -> Particles:
    rng = np.random.default_rng(seed)
    ids = rng.permutation(np.arange(10, 10 + n, dtype=np.uint64))     # not in row order
    return Particles(scale * rng.normal(size=(n, 3)) + offset, rng.normal(size=(n, 3)),
                     rng.uniform(0.5, 1.5, n) / n, ids)


def write_set(folder: Path, p: Particles, time: float, units: Units, k: int,
              number: int = 2) -> list[Path]:
    """Snapshot ``number`` of ``p`` as ``k`` files (k = 1: ``snapshot_NNNN.hdf5``; else
    ``snapshot_NNNN.K.hdf5`` of uneven sizes, as one file per MPI process writes them)."""
    if k == 1:
        return [write_snapshot(folder / f"snapshot_{number:04d}.hdf5", p, time, units)]
    cuts = np.linspace(0, len(p), k + 1).astype(int)
    cuts[1] += 11
    paths = []
    for rank in range(k):
        lo, hi = cuts[rank], cuts[rank + 1]
        part = Particles(p.pos[lo:hi], p.vel[lo:hi], p.mass[lo:hi], p.ids[lo:hi])
        paths.append(write_snapshot(folder / f"snapshot_{number:04d}.{rank}.hdf5", part, time,
                                    units, part=(rank, k, len(p))))
    return paths


def cgs_from_h5py(paths: list[Path]) -> dict[str, np.ndarray]:
    """The files' data times their stored ``Units`` factors (cm, cm/s, g, s), by ID."""
    cols: dict[str, list] = {"pos": [], "vel": [], "mass": [], "ids": []}
    for q in paths:
        with h5py.File(q, "r") as f:
            u, g = f["Units"].attrs, f["PartType1"]
            cols["pos"].append(g["Coordinates"][...] * u["UnitLength_in_cm"])
            cols["vel"].append(g["Velocities"][...] * u["UnitVelocity_in_cm_per_s"])
            cols["mass"].append(g["Masses"][...] * u["UnitMass_in_g"])
            cols["ids"].append(g["ParticleIDs"][...])
            time = f["Header"].attrs["Time"] * u["UnitTime_in_s"]
    return by_id({k: np.concatenate(v) for k, v in cols.items()}, time)


def cgs_from_yt(ds) -> dict[str, np.ndarray]:
    ad = ds.all_data()

    def vector(name, unit):
        return np.column_stack([ad["PartType1", f"{name}_{c}"].to(unit).d for c in "xyz"])

    cols = {"pos": vector("particle_position", "cm"), "vel": vector("particle_velocity", "cm/s"),
            "mass": ad["PartType1", "particle_mass"].to("g").d,
            "ids": ad["PartType1", "particle_index"].d.astype(np.uint64)}
    return by_id(cols, float(ds.current_time.to("s")))


def cgs_from_pynbody(path: Path) -> dict[str, np.ndarray]:
    pynbody = pytest.importorskip("pynbody")
    with warnings.catch_warnings():
        warnings.simplefilter("error")          # a unit or cosmology guess would warn
        f = pynbody.load(str(path))
        cols = {"pos": np.asarray(f["pos"].in_units("cm")),
                "vel": np.asarray(f["vel"].in_units("cm s**-1")),
                "mass": np.asarray(f["mass"].in_units("g")), "ids": np.asarray(f["iord"])}
        time = float(f.properties["time"].in_units("s"))
    return by_id(cols, time)


def by_id(cols: dict[str, np.ndarray], time: float) -> dict[str, np.ndarray]:
    order = np.argsort(cols["ids"])
    out = {k: v[order] for k, v in cols.items()}
    out["time"] = np.float64(time)
    return out


def expected(p: Particles, time: float, units: Units) -> dict[str, np.ndarray]:
    """What the particles are in cgs, from hybridtree's own units (G = 1)."""
    return by_id({"pos": p.pos * units.length_cm, "vel": p.vel * units.velocity_cm_per_s,
                  "mass": p.mass * units.mass_g, "ids": p.ids}, time * units.time_s)


def assert_same(got: dict, want: dict, rtol: float = RTOL) -> None:
    assert np.array_equal(got["ids"], want["ids"])
    for key in ("pos", "vel", "mass", "time"):
        np.testing.assert_allclose(got[key], want[key], rtol=rtol, atol=0, err_msg=key)


# --- units ---------------------------------------------------------------------------

@pytest.mark.parametrize("units", [DEFAULT, PARSEC], ids=["kpc_1e10Msun", "pc_3e5Msun"])
def test_load_yt_is_in_physical_units_like_h5py_and_pynbody(tmp_path, units):
    p, time = particles(), 4.0
    [path] = write_set(tmp_path, p, time, units, 1)
    want = expected(p, time, units)
    assert_same(cgs_from_h5py([path]), want)
    assert_same(cgs_from_yt(load_yt(path)), want)
    assert_same(cgs_from_pynbody(path), want)


def test_default_units_are_207_km_s_and_4_715_myr_in_yt(tmp_path):
    [path] = write_set(tmp_path, particles(), 4.0, DEFAULT, 1)
    ds = load_yt(path)
    # yt's kpc is 3.08567758096e21 cm, 1.7e-10 short of the IAU's
    assert float(ds.length_unit.to("kpc")) == pytest.approx(1.0, rel=1e-9)
    assert float(ds.mass_unit.to("Msun")) == pytest.approx(1e10, rel=1e-4)
    assert float(ds.velocity_unit.to("km/s")) == pytest.approx(207.3865, rel=1e-6)
    assert float(ds.current_time.to("Myr")) == pytest.approx(4.0 * 4.71483, rel=1e-5)


@pytest.mark.parametrize("units", [DEFAULT, PARSEC], ids=["kpc_1e10Msun", "pc_3e5Msun"])
def test_plain_yt_load_reads_a_new_snapshots_units(tmp_path, units):
    """hybridtree's snapshots carry the AREPO mark (Config/VORONOI) for this."""
    p, time = particles(), 2.5
    [path] = write_set(tmp_path, p, time, units, 1)
    assert_same(cgs_from_yt(yt.load(str(path))), expected(p, time, units))


def test_load_yt_reads_units_that_plain_yt_load_ignores(tmp_path, monkeypatch):
    """An older snapshot, without the AREPO mark: yt.load assumes 1 kpc, 1e10 Msun, 1 km/s
    (velocities off by 207 for the default units); load_yt passes the file's units, and so
    does yt.load with hybridtree's frontend."""
    p, time = particles(), 4.0
    [path] = write_set(tmp_path, p, time, PARSEC, 1)
    with h5py.File(path, "a") as f:
        del f["Config"]
    with monkeypatch.context() as m:          # yt without hybridtree's frontend
        for name in ("HybridtreeHDF5Dataset", "HybridtreeFOFDataset"):
            m.delitem(output_type_registry, name, raising=False)
        plain = cgs_from_yt(yt.load(str(path)))
    assert not np.allclose(plain["vel"], expected(p, time, PARSEC)["vel"], rtol=1e-3)
    assert_same(cgs_from_yt(load_yt(path)), expected(p, time, PARSEC))
    # with it (registered as its entry point is): the file's units (G_in_cgs marks it)
    import hybridtree.io.yt_frontend  # noqa: F401
    assert_same(cgs_from_yt(yt.load(str(path))), expected(p, time, PARSEC))


def test_a_run_with_parsec_units_opens_in_yt_as_it_ran(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    (tmp_path / "c.toml").write_text(run_config(200, 3, 0.6, 4, 2, 2))
    assert main(["run", "c.toml", "--quiet", "--set", f"units.length_cm={PC_CM!r}",
                 "--set", f"units.mass_g={3e5 * MSUN_G!r}"]) == 0
    snap = read_snapshot(tmp_path / "out" / "snapshot_0002")
    assert snap.units == PARSEC and snap.time == pytest.approx(4 / 64)
    want = expected(snap.particles, snap.time, snap.units)
    assert_same(cgs_from_yt(load_yt(tmp_path / "out" / "snapshot_0002")), want)
    assert_same(cgs_from_pynbody(tmp_path / "out" / "snapshot_0002.hdf5"), want)


# --- the domain ----------------------------------------------------------------------

def test_load_yt_domain_holds_every_particle_and_is_not_periodic(tmp_path):
    """Far from the origin, where yt's own guess (1.05 x the extremes) would cut."""
    p = particles(offset=50.0)
    [path] = write_set(tmp_path, p, 1.0, DEFAULT, 1)
    ds = load_yt(path)
    assert ds.periodicity == (False, False, False)
    left, right = ds.domain_left_edge.to("code_length").d, ds.domain_right_edge.to("code_length").d
    assert np.all(left < p.pos.min(axis=0)) and np.all(right > p.pos.max(axis=0))
    centre = (p.mass @ p.pos) / p.mass.sum()                  # a cube around the centre of mass
    half = 1.01 * np.abs(p.pos - centre).max()
    np.testing.assert_allclose((left + right) / 2, centre, rtol=1e-12)
    np.testing.assert_allclose(right - left, 2 * half, rtol=1e-12)
    assert float(ds.quan(1.0, "unitary").to("code_length")) == pytest.approx(2 * half, rel=1e-12)
    assert len(ds.all_data()["PartType1", "particle_mass"]) == N


@pytest.mark.parametrize("units, width", [(DEFAULT, (8, "kpc")), (PARSEC, (8, "pc"))],
                         ids=["kpc", "pc"])
def test_particle_projection_plot_renders_and_saves(tmp_path, units, width):
    import matplotlib.image
    p = particles(scale=3.0)                # some outside the 8 x 8 window
    [path] = write_set(tmp_path, p, 1.0, units, 1)
    ds = load_yt(path)
    plot = yt.ParticleProjectionPlot(ds, "z", ("PartType1", "particle_mass"), width=width)
    # the image holds the mass of the particles in its 8 x 8 window (empty pixels: NaN)
    centre = ds.domain_center.to("code_length").d
    inside = np.all(np.abs(p.pos[:, :2] - centre[:2]) < 4.0, axis=1)
    assert N / 2 < inside.sum() < N
    image = plot.frb["PartType1", "particle_mass"].to("g").d
    assert np.nansum(image) == pytest.approx(p.mass[inside].sum() * units.mass_g, rel=1e-9)
    png = Path(plot.save(str(tmp_path / "projection.png"))[0])
    assert png.stat().st_size > 0
    pixels = matplotlib.image.imread(png)
    assert np.ptp(pixels) > 0


# --- multi-file sets -----------------------------------------------------------------

def test_a_multi_file_set_loads_whole_by_any_part_and_by_its_stem(tmp_path):
    p, time = particles(), 3.0
    paths = write_set(tmp_path, p, time, PARSEC, 3)
    want = expected(p, time, PARSEC)
    for arg in [*paths, tmp_path / "snapshot_0002", str(tmp_path / "snapshot_0002")]:
        assert_same(cgs_from_yt(load_yt(arg)), want)
    assert_same(cgs_from_yt(yt.load(str(paths[1]))), want)      # yt itself: any part
    assert_same(cgs_from_pynbody(tmp_path / "snapshot_0002"), want)   # pynbody: the stem


def test_an_incomplete_set_is_an_error_naming_the_missing_part(tmp_path):
    paths = write_set(tmp_path, particles(), 1.0, DEFAULT, 3)
    paths[2].unlink()
    with pytest.raises(SnapshotError, match="snapshot_0002.2.hdf5, part of this 3-file "
                                            "snapshot, is missing"):
        load_yt(tmp_path / "snapshot_0002")


# --- errors --------------------------------------------------------------------------

def _not_a_snapshot(path: Path) -> None:
    with h5py.File(path, "w") as f:
        f.create_dataset("data", data=np.arange(3))


@pytest.mark.parametrize("make, message", [
    (None, "no such file (nor snapshot_0009.hdf5 or snapshot_0009.0.hdf5)"),
    (lambda q: q.with_suffix(".hdf5").write_bytes(b"not hdf5 at all"), "not a readable HDF5 file"),
    (lambda q: _not_a_snapshot(q.with_suffix(".hdf5")), "no Header group: not a GADGET-style"),
], ids=["missing", "not_hdf5", "not_gadget"])
def test_unusable_paths_are_one_line_errors_naming_the_file(tmp_path, make, message):
    stem = tmp_path / "snapshot_0009"
    if make is not None:
        make(stem)
    with pytest.raises(ValueError) as info:
        load_yt(stem)
    assert isinstance(info.value, SnapshotError)
    text = str(info.value)
    assert message in text and "snapshot_0009" in text and "\n" not in text, text


def test_without_yt_the_error_says_how_to_install_it(tmp_path, monkeypatch):
    [path] = write_set(tmp_path, particles(), 1.0, DEFAULT, 1)
    monkeypatch.setitem(sys.modules, "yt.frontends.arepo.api", None)
    monkeypatch.delitem(sys.modules, "hybridtree.io.yt_frontend", raising=False)
    with pytest.raises(ImportError, match="pip install yt"):
        load_yt(path)
