"""output.power_spectrum and output.halos (GADGET-4's POWERSPEC_ON_OUTPUT and FOF): a run
writes, beside each snapshot, the files `hybridtree pk` and `hybridtree halos` write from
it, and a non-cosmological run is refused output.halos."""

from __future__ import annotations

from pathlib import Path

import h5py
import numpy as np
import pytest

from hybridtree.cli import main
from hybridtree.config.settings import ConfigError, load_config

ROOT = Path(__file__).resolve().parents[2]


def _datasets(path: Path) -> dict[str, np.ndarray]:
    out = {}
    with h5py.File(path, "r") as f:
        f.visititems(lambda name, obj: out.__setitem__(name, obj[...])
                     if isinstance(obj, h5py.Dataset) else None)
    return out


def test_pk_and_halos_at_each_output_equal_the_commands(tmp_path, monkeypatch):
    """A 16³ box of 10 Mpc/h (z = 9 → 0, 2 outputs and the start) with both settings on: each of the
    three snapshots gets powerspec_NNNN.txt and fof_tab_NNN.hdf5, equal (text; every
    dataset bit for bit) to `hybridtree pk --out` and `hybridtree halos` on that snapshot;
    z = 0 has halos."""
    monkeypatch.chdir(tmp_path)
    cfg = tmp_path / "box.toml"
    cfg.write_text((ROOT / "configs" / "cosmo_box_small.toml").read_text())
    assert main(["run", str(cfg), "--set", "ics.n_grid=16", "--set", "ics.box=14.285714285714286",
                 "--set", "gravity.eps=0.03", "--set", "cosmology.steps=8",
                 "--set", "cosmology.z_start=9", "--set", "output.redshifts=1, 0",
                 "--set", "gravity.pm_grid=32", "--set", "output.dir=run",
                 "--set", "output.power_spectrum=true", "--set", "output.halos=true",
                 "--quiet"]) == 0
    run = tmp_path / "run"
    (tmp_path / "cmd").mkdir()
    halos = 0
    for n in range(3):
        snap = run / f"snapshot_{n:04d}.hdf5"
        pk = tmp_path / "cmd" / f"pk_{n}.txt"
        assert main(["pk", str(snap), "--out", str(pk)]) == 0
        assert (run / f"powerspec_{n:04d}.txt").read_text() == \
            pk.read_text().replace(str(snap), snap.name)
        assert main(["halos", str(snap), "--output", str(tmp_path / "cmd")]) == 0
        ours = _datasets(run / f"fof_tab_{n:03d}.hdf5")
        theirs = _datasets(tmp_path / "cmd" / f"fof_tab_{n:03d}.hdf5")
        assert ours.keys() == theirs.keys()
        for key in ours:
            assert np.array_equal(ours[key], theirs[key]), key
        halos = len(ours.get("Group/GroupLen", []))
    assert halos > 0


def test_halos_on_output_need_a_cosmological_run():
    with pytest.raises(ConfigError, match="output.halos"):
        load_config(ROOT / "configs" / "plummer_small.toml", {"output.halos": True})
