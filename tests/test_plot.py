"""``hybridtree plot``: PNGs from a tiny fake run folder (no OpenCL needed)."""

import csv
from pathlib import Path

import matplotlib.image
import numpy as np
import pytest

from hybridtree.cli import main
from hybridtree.io.snapshot import Particles, write_snapshot
from hybridtree.plot import plot_run
from hybridtree.units import Units

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
    with pytest.raises(FileNotFoundError, match="no such folder: "):
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
    assert err.startswith("hybridtree: error: no such folder: ")
    assert err.count("\n") == 1
