"""``hybridtree plot``: PNGs from a tiny fake run folder (no OpenCL needed), and the
units, data and legend of the figures of two small real runs (kpc and pc)."""

import csv
import re
from pathlib import Path

import h5py
import matplotlib.colors
import matplotlib.image
import numpy as np
import pytest
from matplotlib.text import Text
from matplotlib.transforms import Bbox

from tests.helpers import one_error_line, run_config
from hybridtree.cli import main
from hybridtree.analysis.diagnostics import read_diagnostics
from hybridtree.io.snapshot import latest_snapshot, write_snapshot
from hybridtree.particles import Particles
from hybridtree.analysis.plot import plot_run, plot_units, snapshot_units
from hybridtree.config.units import Units

COLUMNS = ("step,time,kinetic,potential,total,rel_energy_error,px,py,pz,lx,ly,lz,"
           "virial_ratio,r10,r50,r90,wall_build,wall_force,wall_integrate,wall_io,"
           "interactions_per_s").split(",")
UNITS = Units(3.0856775814913673e21, 1.98841e43)
PNG_MAGIC = b"\x89PNG\r\n\x1a\n"


def write_csv(folder: Path, rows: int = 5) -> None:
    with open(folder / "diagnostics.csv", "w", newline="") as f:
        w = csv.DictWriter(f, COLUMNS)
        w.writeheader()
        for i in range(rows):
            row = dict.fromkeys(COLUMNS, "0.0")
            # a zero energy error on the first row must not break the log axis
            row.update(step=str(i), time=repr(0.1 * i), rel_energy_error=repr(1e-6 * i),
                       r10=repr(0.2 + 0.01 * i), r50=repr(0.8), r90=repr(2.0 - 0.01 * i))
            w.writerow(row)


def write_snap(path: Path, time: float, n: int = 200, seed: int = 0, shift: float = 0.0) -> None:
    rng = np.random.default_rng(seed)
    pos = rng.normal(size=(n, 3)) + shift
    pos[0] = 1e4  # an escaper: must not shrink the picture
    p = Particles(pos, np.zeros((n, 3)), np.full(n, 1.0 / n), np.arange(1, n + 1, dtype=np.uint64))
    write_snapshot(path, p, time, UNITS)


def assert_png(path: Path) -> None:
    assert path.is_file()
    assert path.read_bytes()[:8] == PNG_MAGIC
    img = matplotlib.image.imread(path)
    assert img.ndim == 3 and img.shape[0] > 100 and img.shape[1] > 100


def no_temporaries(folder: Path) -> bool:
    return not [p for p in folder.iterdir() if p.name.startswith(".") or "tmp" in p.name]


@pytest.fixture
def run(tmp_path: Path) -> Path:
    write_csv(tmp_path)
    write_snap(tmp_path / "snapshot_0002.hdf5", 0.2, seed=2)
    write_snap(tmp_path / "snapshot_0010.hdf5", 1.0, seed=10)  # last by number, not by name
    return tmp_path


def test_plots_diagnostics_and_last_snapshot(run: Path):
    paths = plot_run(run)
    assert paths == [run / "diagnostics.png", run / "snapshot_0010_xy.png"]
    for p in paths:
        assert_png(p)
    assert not (run / "snapshot_0002_xy.png").exists()
    assert no_temporaries(run)


def test_chosen_snapshot(run: Path):
    paths = plot_run(str(run), snapshot=run / "snapshot_0002.hdf5")
    assert paths[-1] == run / "snapshot_0002_xy.png"
    assert_png(paths[-1])
    # a bare name is looked up in the folder
    assert plot_run(run, snapshot="snapshot_0002.hdf5")[-1] == run / "snapshot_0002_xy.png"
    assert no_temporaries(run)


def test_only_one_input(tmp_path: Path):
    write_csv(tmp_path)
    assert plot_run(tmp_path) == [tmp_path / "diagnostics.png"]
    (tmp_path / "diagnostics.csv").unlink()
    (tmp_path / "diagnostics.png").unlink()
    write_snap(tmp_path / "snapshot_0000.hdf5", 0.0, shift=5.0)
    assert plot_run(tmp_path) == [tmp_path / "snapshot_0000_xy.png"]
    assert_png(tmp_path / "snapshot_0000_xy.png")
    assert no_temporaries(tmp_path)


def test_errors(tmp_path: Path):
    with pytest.raises(FileNotFoundError, match="no such run folder or snapshot file: "):
        plot_run(tmp_path / "missing")
    with pytest.raises(FileNotFoundError, match="no diagnostics.csv and no snapshot"):
        plot_run(tmp_path)
    write_csv(tmp_path)
    with pytest.raises(FileNotFoundError, match="no such snapshot: "):
        plot_run(tmp_path, snapshot="snapshot_0099.hdf5")
    assert list(tmp_path.iterdir()) == [tmp_path / "diagnostics.csv"]


def test_cli(run: Path, capsys):
    assert main(["plot", str(run), "--snapshot", str(run / "snapshot_0002.hdf5")]) == 0
    out = capsys.readouterr().out
    assert "diagnostics.png" in out and "snapshot_0002_xy.png" in out
    assert main(["plot", str(run)]) == 0
    assert_png(run / "snapshot_0010_xy.png")
    capsys.readouterr()
    assert main(["plot", str(run / "missing")]) == 2
    err = capsys.readouterr().err
    assert err.startswith("hybridtree: error: no such run folder or snapshot file: ")
    assert err.count("\n") == 1


# ---------------------------------------------------------------------------------------
# A snapshot file instead of a folder: its projection, and its run folder's diagnostics.

def test_a_snapshot_file_in_a_run_folder(run: Path, capsys):
    assert main(["plot", str(run / "snapshot_0002.hdf5")]) == 0
    assert capsys.readouterr().out.splitlines() == [
        f"wrote {run / 'diagnostics.png'}", f"wrote {run / 'snapshot_0002_xy.png'}"]
    assert_png(run / "diagnostics.png")
    assert_png(run / "snapshot_0002_xy.png")
    assert not (run / "snapshot_0010_xy.png").exists()      # the one given, not the last
    # its stem, as hybridtree info takes it
    assert plot_run(run / "snapshot_0010") == [run / "diagnostics.png",
                                               run / "snapshot_0010_xy.png"]
    assert no_temporaries(run)


def test_a_snapshot_file_on_its_own(tmp_path: Path, capsys):
    # e.g. initial conditions from hybridtree ic: no diagnostics.csv beside it
    write_snap(tmp_path / "plummer.hdf5", 0.0)
    assert main(["plot", str(tmp_path / "plummer.hdf5")]) == 0
    assert capsys.readouterr().out.splitlines() == [f"wrote {tmp_path / 'plummer_xy.png'}"]
    assert_png(tmp_path / "plummer_xy.png")
    assert sorted(q.name for q in tmp_path.iterdir()) == ["plummer.hdf5", "plummer_xy.png"]


def test_a_file_that_is_no_snapshot(run: Path, capsys):
    (run / "notes.txt").write_text("not a snapshot\n")
    before = sorted(run.iterdir())
    for name in ("diagnostics.csv", "notes.txt"):
        assert main(["plot", str(run / name)]) == 2
        one_error_line(capsys, "expects a run folder (the folder a run wrote) or a snapshot "
                       f"file, got {run / name}: not an HDF5 file")
    # a snapshot file and --snapshot: which one to draw?
    assert main(["plot", str(run / "snapshot_0002.hdf5"), "--snapshot",
                 "snapshot_0010.hdf5"]) == 2
    one_error_line(capsys, "--snapshot", "run folder", str(run / "snapshot_0002.hdf5"))
    assert main(["plot", str(run / "snapshot_0099.hdf5")]) == 2
    one_error_line(capsys, f"no such run folder or snapshot file: {run / 'snapshot_0099.hdf5'}")
    assert sorted(run.iterdir()) == before


# ---------------------------------------------------------------------------------------
# Physical units.  The unit sizes are spelled out here, not taken from hybridtree.analysis.plot.

KPC = 3.0856775814913673e21         # cm
PC_RUN = 3.0857e18                  # cm: a run's units.length_cm "in parsecs"
MSUN = 1.98841e33                   # g
YR = 3.15576e7                      # s (Julian)
MSUN10 = 1e10 * MSUN


def expected(length_cm: float, length: str, length_size: float, time: str,
             time_size: float) -> dict:
    u = Units(length_cm, MSUN10)
    return {"length": length, "lf": length_cm / length_size, "time": time,
            "tf": u.time_s / time_size, "mf": 1e10}


RUNS = {
    # default units: 1 kpc, 1e10 Msun, 4.715 Myr
    "kpc": ([], expected(KPC, "kpc", KPC, "Myr", 1e6 * YR)),
    # 1 pc, 1e10 Msun: the time unit is 149 yr
    "pc": (["--set", f"units.length_cm={PC_RUN}"],
           expected(PC_RUN, "pc", KPC / 1e3, "kyr", 1e3 * YR)),
}


@pytest.fixture(scope="module")
def real_runs(tmp_path_factory) -> dict[str, Path]:
    """Two small runs through the command line (OpenCL): default units and parsecs."""
    base = tmp_path_factory.mktemp("runs")
    config = base / "small.toml"
    config.write_text(run_config(300, 1, 0.6, 4, 2, 1))
    folders = {}
    for name, (extra, _) in RUNS.items():
        folders[name] = base / name
        assert main(["run", str(config), "--quiet", "--set", f"output.dir={folders[name]}",
                     *extra]) == 0
    return folders


def internal_snapshot(path: Path) -> tuple[np.ndarray, np.ndarray, float]:
    """(positions, masses, time) as stored: internal units."""
    with h5py.File(path, "r") as f:
        g = f["PartType1"]
        return g["Coordinates"][...], g["Masses"][...], float(f["Header"].attrs["Time"])


@pytest.mark.parametrize("name", sorted(RUNS))
def test_diagnostics_in_physical_units(real_runs, figures, name):
    folder, want = real_runs[name], RUNS[name][1]
    plot_run(folder)
    fig = figures["diagnostics.png"]
    ax_e, ax_r = fig.axes
    assert ax_r.get_xlabel() == f"time ({want['time']})"
    assert ax_r.get_ylabel() == f"Lagrangian radius ({want['length']})"
    rows = read_diagnostics(folder / "diagnostics.csv")
    t = np.array([float(r["time"]) for r in rows])
    assert t[-1] > 0
    [energy] = ax_e.get_lines()
    np.testing.assert_allclose(energy.get_xdata(), t * want["tf"], rtol=1e-12)
    de = np.abs([float(r["rel_energy_error"]) for r in rows])   # dimensionless: as stored
    np.testing.assert_allclose(energy.get_ydata()[de > 0], de[de > 0], rtol=1e-12)
    lines = ax_r.get_lines()
    assert [line.get_label() for line in lines] == ["10 %", "50 %", "90 %"]
    for line, col in zip(lines, ("r10", "r50", "r90")):
        r = np.array([float(row[col]) for row in rows])
        np.testing.assert_allclose(line.get_xdata(), t * want["tf"], rtol=1e-12)
        np.testing.assert_allclose(line.get_ydata(), r * want["lf"], rtol=1e-12)


def window(artist, renderer) -> Bbox:
    return artist.get_window_extent(renderer)


@pytest.mark.parametrize("name", sorted(RUNS))
def test_legend_covers_no_curve(real_runs, figures, name):
    plot_run(real_runs[name])
    fig = figures["diagnostics.png"]
    renderer = fig.canvas.get_renderer()
    legends = [ax.get_legend() for ax in fig.axes if ax.get_legend() is not None]
    assert legends, "the radii need a legend"
    for legend in legends:
        box = window(legend, renderer)
        assert fig.bbox.contains(box.x0, box.y0) and fig.bbox.contains(box.x1, box.y1)
        for ax in fig.axes:
            assert not box.overlaps(window(ax, renderer)), "legend inside an axes"
            for line in ax.get_lines():
                xy = np.column_stack([line.get_xdata(), line.get_ydata()])
                xy = line.get_transform().transform(xy[np.isfinite(xy).all(axis=1)])
                assert not box.overlaps(Bbox.from_extents(*xy.min(axis=0), *xy.max(axis=0)))


@pytest.mark.parametrize("name", sorted(RUNS))
def test_projection_in_physical_units(real_runs, figures, name):
    folder, want = real_runs[name], RUNS[name][1]
    snap = latest_snapshot(folder)
    plot_run(folder)
    fig = figures[f"{snap.stem}_xy.png"]
    ax, bar = fig.axes
    length = want["length"]
    assert (ax.get_xlabel(), ax.get_ylabel()) == (f"x ({length})", f"y ({length})")
    assert bar.get_ylabel() == f"surface density (M☉/{length}²)"
    pos, mass, t = internal_snapshot(snap)
    # t as the config and the console give it, then in the physical unit
    assert f"t = {t:.4g} ({t * want['tf']:.4g} {want['time']}), N = " in ax.get_title()
    [image] = ax.get_images()
    x0, x1, y0, y1 = image.get_extent()
    # centred on the centre of mass, converted
    centre = np.average(pos[:, :2], axis=0, weights=mass) * want["lf"]
    np.testing.assert_allclose([(x0 + x1) / 2, (y0 + y1) / 2], centre, rtol=1e-12, atol=1e-12)
    assert (ax.get_xlim(), ax.get_ylim()) == ((x0, x1), (y0, y1))
    # the surface density integrates to the mass in the picture, in Msun
    sigma = image.get_array()
    ny, nx = sigma.shape
    xy = pos[:, :2] * want["lf"]
    inside = (xy[:, 0] >= x0) & (xy[:, 0] <= x1) & (xy[:, 1] >= y0) & (xy[:, 1] <= y1)
    assert 0.9 * len(xy) < inside.sum() < len(xy)           # a few escapers are left out
    pixel = (x1 - x0) / nx * (y1 - y0) / ny
    np.testing.assert_allclose(sigma.sum() * pixel, mass[inside].sum() * want["mf"], rtol=1e-9)


# ---------------------------------------------------------------------------------------
# What a newcomer reads off the figures without the docs.

PLAIN = (1e-3, 1e4)             # tick values that must read as plain numbers (2, 0.5, 20)


def labelled_ticks(axis) -> list[tuple[float, str]]:
    """(value, drawn text) of the labelled ticks, major and minor, inside ``axis``' view."""
    axis.get_majorticklabels(), axis.get_minorticklabels()      # brings the ticks up to date
    lo, hi = sorted(axis.get_view_interval())
    out = []
    for ticks in (axis.get_major_ticks(len(axis.get_majorticklocs())),
                  axis.get_minor_ticks(len(axis.get_minorticklocs()))):
        for tick in ticks:
            label = tick.label1 if tick.label1.get_visible() else tick.label2
            if label.get_visible() and label.get_text() and lo <= tick.get_loc() <= hi:
                out.append((tick.get_loc(), label.get_text()))
    return out


def assert_plain_numbers(axis, at_least: int = 2) -> None:
    """Every labelled tick of ``axis`` in the PLAIN range reads as its value, written out."""
    ticks = labelled_ticks(axis)
    plain = [(v, text) for v, text in ticks if PLAIN[0] <= abs(v) < PLAIN[1]]
    assert len(plain) >= at_least, ticks
    for value, text in plain:
        assert float(text.replace("−", "-")) == pytest.approx(value, rel=1e-9), ticks


SUPERSCRIPTS = str.maketrans("⁰¹²³⁴⁵⁶⁷⁸⁹⁻", "0123456789-")


def number_in(text: str) -> float:
    """The first number of ``text``: plain (1390, 0.25) or as 1.39×10⁹."""
    m = re.search(r"(\d+(?:\.\d+)?)(?:×10([⁰¹²³⁴⁵⁶⁷⁸⁹⁻]+))?", text)
    assert m, text
    return float(m.group(1)) * 10.0 ** int(m.group(2).translate(SUPERSCRIPTS) if m.group(2) else 0)


@pytest.mark.parametrize("name", sorted(RUNS))
def test_diagnostics_time_in_internal_units_too(real_runs, figures, name):
    """The config and the console give times in internal units (t = 0 .. t_end): the
    figure shows them beside the physical ones, on a second time axis."""
    folder, want = real_runs[name], RUNS[name][1]
    plot_run(folder)
    fig = figures["diagnostics.png"]
    renderer = fig.canvas.get_renderer()
    ax_e, ax_r = fig.axes
    secondary = [c for ax in fig.axes for c in ax.child_axes]
    assert len(secondary) == 1, "one axis of internal time"
    [sec] = secondary
    assert sec.get_xlabel() == "t (internal units, as in the config and the console)"
    lo, hi = ax_r.get_xlim()
    np.testing.assert_allclose(sec.get_xlim(), (lo / want["tf"], hi / want["tf"]), rtol=1e-9)
    t_end = float(read_diagnostics(folder / "diagnostics.csv")[-1]["time"])
    assert sec.get_xlim()[1] >= t_end
    # its ticks sit where the physical axis has the same time, labelled in plain numbers
    ticks = labelled_ticks(sec.xaxis)
    assert len(ticks) >= 3
    for value, text in ticks:
        assert float(text.replace("−", "-")) == pytest.approx(value, abs=1e-12)
        [tick] = [t for t in sec.xaxis.get_major_ticks() if t.get_loc() == value]
        label = tick.label2 if tick.label2.get_visible() else tick.label1
        centre = window(label, renderer).x0 / 2 + window(label, renderer).x1 / 2
        x = ax_e.transData.transform((value * want["tf"], 1.0))[0]
        assert centre == pytest.approx(x, abs=1.5)
    box = window(sec, renderer)
    assert fig.bbox.contains(box.x0, box.y0) and fig.bbox.contains(box.x1, box.y1)
    # (the projection's title gives both too: test_projection_in_physical_units)


@pytest.mark.parametrize("name", sorted(RUNS))
def test_log_ticks_are_plain_numbers(real_runs, figures, name):
    folder = real_runs[name]
    snap = latest_snapshot(folder)
    plot_run(folder)
    ax_e, ax_r = figures["diagnostics.png"].axes
    assert ax_r.get_yscale() == "log"
    assert_plain_numbers(ax_r.yaxis)                    # kpc: 0.3, 1, 2; pc: 300, 1000
    ax, bar = figures[f"{snap.stem}_xy.png"].axes
    assert bar.get_yscale() == "log"
    # energy errors (10⁻⁵) and these surface densities (10¹⁰ M☉/kpc² or M☉/pc²) are not
    # of everyday size: a power of ten reads better there
    for axis in (ax_e.yaxis, bar.yaxis):
        ticks = labelled_ticks(axis)
        assert ticks
        for value, text in ticks:
            if PLAIN[0] <= value < PLAIN[1]:
                assert float(text) == pytest.approx(value, rel=1e-9), ticks
            else:
                assert "10^{" in text, ticks


def test_colour_bar_ticks_are_plain_numbers(tmp_path, figures):
    # N-body units: surface densities of tens to hundreds
    write_snap(tmp_path / "snapshot_0000.hdf5", 0.0)
    strip_units(tmp_path / "snapshot_0000.hdf5")
    plot_run(tmp_path)
    ax, bar = figures["snapshot_0000_xy.png"].axes
    assert bar.get_yscale() == "log"
    assert_plain_numbers(bar.yaxis)


def notes(fig) -> list[Text]:
    return [t for t in fig.findobj(Text) if "no particle" in t.get_text()]


@pytest.mark.parametrize("name", sorted(RUNS))
def test_projection_explains_empty_pixels_and_floor(real_runs, figures, name):
    folder, want = real_runs[name], RUNS[name][1]
    snap = latest_snapshot(folder)
    plot_run(folder)
    fig = figures[f"{snap.stem}_xy.png"]
    renderer = fig.canvas.get_renderer()
    ax, bar = fig.axes
    # the colour bar is as tall as the map, beside it
    a, b = window(ax, renderer), window(bar, renderer)
    assert b.x0 > a.x1
    assert (b.y0, b.y1) == (pytest.approx(a.y0, abs=1.0), pytest.approx(a.y1, abs=1.0))
    # the colour bar's floor is one particle per pixel
    [image] = ax.get_images()
    pos, mass, _ = internal_snapshot(snap)
    x0, x1, y0, y1 = image.get_extent()
    ny, nx = image.get_array().shape
    one = mass.min() * want["mf"] / ((x1 - x0) / nx * (y1 - y0) / ny)
    assert image.norm.vmin == pytest.approx(one, rel=1e-9)
    assert bar.get_ylim()[0] == pytest.approx(one, rel=1e-9)
    # empty pixels are drawn black, unlike the floor's colour
    bad = image.cmap.get_bad()
    empty = bad[:3] if bad[3] == 1 else matplotlib.colors.to_rgb(ax.get_facecolor())
    assert tuple(empty) == (0.0, 0.0, 0.0)
    assert np.linalg.norm(image.cmap(image.norm(one))[:3]) > 0.15, "the floor looks empty"
    # ... and the figure says so, with the floor's value, where it can be read
    [note] = notes(fig)
    text = note.get_text()
    assert "black: no particle in the pixel" in text
    assert "one particle per pixel" in text
    assert number_in(text.split("one particle per pixel")[1]) == pytest.approx(one, rel=0.01)
    box = window(note, renderer)
    assert fig.bbox.contains(box.x0, box.y0) and fig.bbox.contains(box.x1, box.y1)
    assert not box.overlaps(a) and not box.overlaps(b)


def test_unit_choice():
    cases = [(KPC, "kpc", 1.0), (KPC / 1e3, "pc", 1.0), (100 * KPC, "kpc", 100.0),
             (0.5 * KPC, "kpc", 0.5), (0.1 * KPC, "pc", 100.0), (1e3 * KPC, "Mpc", 1.0),
             (1.495978707e13, "AU", 1.0), (1e10, "AU", 1e10 / 1.495978707e13)]
    for length_cm, name, factor in cases:
        u = plot_units(length_cm, MSUN10, 1e6 * YR)
        assert (u.length, u.time, u.mass_factor) == (name, "Myr", 1e10)
        assert u.length_factor == pytest.approx(factor, rel=1e-12)
    for time_s, name in [(4.715e6 * YR, "Myr"), (9e6 * YR, "Myr"), (1.1e7 * YR, "Gyr"),
                         (149 * YR, "kyr"), (5 * YR, "yr"), (1.0, "yr"), (1e12 * YR, "Gyr")]:
        assert plot_units(KPC, MSUN10, time_s).time == name


def strip_units(path: Path, parameters: dict | None = None) -> None:
    """Make ``path`` a snapshot as another tool might write it: no unit attributes."""
    with h5py.File(path, "a") as f:
        del f["Units"]
        del f["Parameters"]
        if parameters is not None:
            f.create_group("Parameters").attrs.update(parameters)


def test_no_stated_units_means_nbody_units(tmp_path, figures):
    write_csv(tmp_path)
    write_snap(tmp_path / "snapshot_0001.hdf5", 0.5)
    strip_units(tmp_path / "snapshot_0001.hdf5")
    assert plot_run(tmp_path) == [tmp_path / "diagnostics.png", tmp_path / "snapshot_0001_xy.png"]
    ax_e, ax_r = figures["diagnostics.png"].axes
    assert ax_r.get_xlabel() == "time (N-body units)"
    assert ax_r.get_ylabel() == "Lagrangian radius (N-body units)"
    np.testing.assert_allclose(ax_r.get_lines()[0].get_xdata(), 0.1 * np.arange(5))
    ax, bar = figures["snapshot_0001_xy.png"].axes
    assert (ax.get_xlabel(), ax.get_ylabel()) == ("x (N-body units)", "y (N-body units)")
    assert bar.get_ylabel() == "surface density (N-body units)"
    assert "t = 0.5 (N-body units)" in ax.get_title()
    pos, mass, _ = internal_snapshot(tmp_path / "snapshot_0001.hdf5")
    x0, x1, y0, y1 = ax.get_images()[0].get_extent()
    np.testing.assert_allclose([(x0 + x1) / 2, (y0 + y1) / 2],
                               np.average(pos[:, :2], axis=0, weights=mass), rtol=1e-12)


def test_units_from_the_run_settings(tmp_path):
    # no Units group, but the run's own settings in Parameters (G = 1)
    path = tmp_path / "snapshot_0000.hdf5"
    write_snap(path, 0.0)
    strip_units(path, {"units.length_cm": PC_RUN, "units.mass_g": MSUN10})
    u = snapshot_units(path)
    want = RUNS["pc"][1]
    assert (u.length, u.time) == ("pc", "kyr")
    assert u.length_factor == pytest.approx(want["lf"], rel=1e-12)
    assert u.time_factor == pytest.approx(want["tf"], rel=1e-12)


def test_a_stated_time_unit_is_used(tmp_path):
    # GADGET-4's internal units (kpc, 1e10 Msun, km/s) do not have G = 1: their time unit
    # is kpc / (km/s) = 0.978 Gyr, which the file states
    path = tmp_path / "snapshot_0000.hdf5"
    write_snap(path, 2.0)
    with h5py.File(path, "a") as f:
        f["Units"].attrs["UnitVelocity_in_cm_per_s"] = 1e5
        f["Units"].attrs["UnitTime_in_s"] = KPC / 1e5
    u = snapshot_units(path)
    assert (u.length, u.length_factor, u.time) == ("kpc", 1.0, "Gyr")
    assert u.time_factor == pytest.approx(KPC / 1e5 / (1e9 * YR), rel=1e-12)
