"""``hybridtree pk``: P(k) of a periodic GADGET-style snapshot in h/Mpc and (Mpc/h)³, from
one file or a set, in the file's length unit; a snapshot without a box is a user error."""

from __future__ import annotations

from pathlib import Path

import h5py
import numpy as np
import pytest

from hybridtree.cli import main
from hybridtree.config.units import Units
from hybridtree.io.snapshot import write_snapshot
from hybridtree.particles import Particles
from tests.helpers import one_error_line

BOX = 100.0             # Mpc/h
AMP, MODE = 0.01, 3     # δ = AMP cos(2π MODE x / BOX)
N_MESH = 16


def wave() -> np.ndarray:
    """A lattice displaced by one plane wave (Mpc/h), fine along x: its P is V AMP²/4 at
    k0 = 2π MODE / BOX and nothing elsewhere."""
    axes = [(np.arange(n) + 0.5) * BOX / n for n in (64, N_MESH, N_MESH)]
    pos = np.stack([a.ravel() for a in np.meshgrid(*axes, indexing="ij")], axis=1)
    k0 = 2 * np.pi * MODE / BOX
    pos[:, 0] -= AMP / k0 * np.sin(k0 * pos[:, 0])
    return pos


def write_gadget(path: Path, pos: np.ndarray, box: float, *, unit_cm: float | None = None,
                 part: tuple[int, int] = (0, 1), time: float = 0.5, **header) -> None:
    """A GADGET-4-like file: PartType1 with a MassTable entry (no Masses)."""
    with h5py.File(path, "w") as f:
        h = f.create_group("Header").attrs
        counts = np.zeros(6, np.uint64)
        counts[1] = len(pos)
        h["NumPart_ThisFile"] = counts
        h["MassTable"] = np.array([0, 2.5, 0, 0, 0, 0], float)
        h["Time"] = time
        h["Redshift"] = 1 / time - 1
        h["NumFilesPerSnapshot"] = part[1]
        if box is not None:
            h["BoxSize"] = box
        for key, value in header.items():
            h[key] = value
        if unit_cm is not None:
            f.create_group("Parameters").attrs["UnitLength_in_cm"] = unit_cm
        f.create_group("PartType1").create_dataset("Coordinates", data=pos.astype(np.float32))


def table(text: str) -> tuple[list[str], np.ndarray]:
    lines = text.splitlines()
    head = [line for line in lines if line.startswith("#")]
    rows = np.array([[float(x) for x in line.split()] for line in lines
                     if line.strip() and not line.startswith("#")])
    return head, rows


def check_wave(rows: np.ndarray) -> None:
    k, p, modes = rows.T
    k0 = 2 * np.pi * MODE / BOX
    i = int(np.argmin(np.abs(k - k0)))
    assert k[0] == pytest.approx(2 * np.pi / BOX, rel=0.3) and k[-1] < np.pi * N_MESH / BOX * 1.1
    # P in (Mpc/h)^3: the shell's total is V AMP²/4 at +k0 and at −k0 (shot noise of
    # the lattice, subtracted by pk, put back)
    shot = BOX ** 3 / 64 / N_MESH ** 2
    assert (p[i] + shot) * modes[i] / 2 == pytest.approx(BOX ** 3 * AMP ** 2 / 4, rel=0.01)


def test_pk_of_a_gadget_file_in_kpc_per_h(tmp_path, capsys):
    path = tmp_path / "snap_005.hdf5"
    write_gadget(path, wave() * 1000.0, BOX * 1000.0)        # GADGET's default: kpc/h
    assert main(["pk", str(path), "--mesh", str(N_MESH)]) == 0
    head, rows = table(capsys.readouterr().out)
    check_wave(rows)
    text = "\n".join(head)
    assert "box = 100 Mpc/h" in text and f"mesh = {N_MESH}^3 (TSC, interlaced)" in text
    assert f"N = {64 * N_MESH ** 2}" in text and "z = 1/Time - 1 = 1" in text
    assert "shot noise" in text and "k [h/Mpc]" in text


def test_pk_of_a_set_in_mpc_per_h_by_its_stem_to_a_file(tmp_path, capsys):
    pos = wave()
    for k, rows in enumerate(np.array_split(np.arange(len(pos)), 2)):
        write_gadget(tmp_path / f"snap_005.{k}.hdf5", pos[rows], BOX, unit_cm=3.085678e24,
                     part=(k, 2))
    out = tmp_path / "pk.txt"
    assert main(["pk", str(tmp_path / "snap_005"), "--mesh", str(N_MESH), "--order", "cic",
                 "--no-interlace", "--out", str(out)]) == 0
    assert f"wrote {out}" in capsys.readouterr().out
    head, rows = table(out.read_text())
    check_wave(rows)
    assert "(CIC)" in "\n".join(head)


def test_lengths_without_h_are_made_per_h(tmp_path, capsys):
    """A Coordinates dataset of h_scaling 0 holds L, not L/h: × HubbleParam."""
    h = 0.5
    path = tmp_path / "snap.hdf5"
    write_gadget(path, wave() / h, BOX / h, unit_cm=3.085678e24, HubbleParam=h)
    with h5py.File(path, "r+") as f:
        f["PartType1/Coordinates"].attrs["h_scaling"] = 0.0
    assert main(["pk", str(path), "--mesh", str(N_MESH)]) == 0
    head, rows = table(capsys.readouterr().out)
    check_wave(rows)
    assert "box = 100 Mpc/h" in "\n".join(head)


@pytest.mark.parametrize("box", [None, 0.0, -1.0])
def test_a_snapshot_without_a_box_is_a_user_error(tmp_path, capsys, box):
    path = tmp_path / "open.hdf5"
    write_gadget(path, wave(), box)
    assert main(["pk", str(path)]) == 2
    one_error_line(capsys, f"{path} is not a periodic box (no BoxSize)")


def test_a_run_snapshot_of_open_boundaries_is_a_user_error(tmp_path, capsys):
    path = tmp_path / "snapshot_0000.hdf5"
    n = 10
    p = Particles(np.random.default_rng(0).normal(size=(n, 3)), np.zeros((n, 3)),
                  np.full(n, 0.1), np.arange(1, n + 1, dtype=np.uint64))
    write_snapshot(path, p, 0.0, Units(3.085678e21, 1.989e43))
    assert main(["pk", str(path)]) == 2
    one_error_line(capsys, "is not a periodic box (no BoxSize)")


def test_a_mesh_too_small_or_a_missing_file_is_a_user_error(tmp_path, capsys):
    path = tmp_path / "snap.hdf5"
    write_gadget(path, wave(), BOX)
    assert main(["pk", str(path), "--mesh", "1"]) == 2
    one_error_line(capsys, "n_mesh")
    assert main(["pk", str(tmp_path / "nothing")]) == 2
    one_error_line(capsys, "no such file")
