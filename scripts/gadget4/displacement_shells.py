"""Displacement fields of two codes' runs from the same grid ICs, by Fourier shell.

    python scripts/gadget4/displacement_shells.py ICS G4_OUTPUT HYBRIDTREE_RUN

ICS: GADGET-4's IC snapshot (NGENIC, CREATE_GRID: particle ID i + 1 sits at grid point i
of an N³ lattice in C order); G4_OUTPUT: its run's folder (snapshot_001..003); and
HYBRIDTREE_RUN: hybridtree's run folder on those ICs (snapshot_0001..0003, the output of
scripts/gadget4/compare_hybridtree.sh).  For each pair of snapshots, every particle's
displacement from its grid point (nearest image) is Fourier transformed on the Lagrangian
grid and its power summed in shells |k| / k_f = 1, 2, ...; printed: the square root of
hybridtree's over GADGET-4's per shell (1: the same displacements at that scale).  A
constant offset of the grid points changes only the k = 0 shell, which is not printed.
"""

import sys

import h5py
import numpy as np


def load(path: str) -> tuple[np.ndarray, np.ndarray, float, float]:
    """(IDs, coordinates) in ID order, the time a and BoxSize."""
    with h5py.File(path) as f:
        ids, x = f["PartType1/ParticleIDs"][:], f["PartType1/Coordinates"][:]
        a, box = float(f["Header"].attrs["Time"]), float(f["Header"].attrs["BoxSize"])
    order = np.argsort(ids)
    return ids[order], x[order], a, box


def shell_power(x: np.ndarray, n: int, box: float) -> np.ndarray:
    """Mean |FFT of the displacement|² per shell of integer |k| / k_f."""
    q = (np.arange(n ** 3)[:, None] // np.array([n * n, n, 1]) % n + 0.5) * box / n
    d = np.mod(x - q + box / 2, box) - box / 2
    power = sum(np.abs(np.fft.fftn(d[:, c].reshape(n, n, n))) ** 2 for c in range(3))
    k = np.fft.fftfreq(n, 1.0 / n)
    shell = np.rint(np.sqrt(k[:, None, None] ** 2 + k[None, :, None] ** 2
                            + k[None, None, :] ** 2)).astype(int).ravel()
    return np.bincount(shell, power.ravel()) / np.maximum(np.bincount(shell), 1)


def main() -> None:
    ics, g4, ht = sys.argv[1:4]
    ids0, _, _, box = load(ics)
    n = round(len(ids0) ** (1 / 3))
    for i in (1, 2, 3):
        ig, xg, ag, _ = load(f"{g4}/snapshot_{i:03d}.hdf5")
        ih, xh, ah, _ = load(f"{ht}/snapshot_{i:04d}.hdf5")
        assert np.array_equal(ig, ids0) and np.array_equal(ih, ids0), "not the same particles"
        ratio = np.sqrt(shell_power(xh, n, box)[1:n // 2 + 1] / shell_power(xg, n, box)[1:n // 2 + 1])
        print(f"a = {ag:.5f} (GADGET-4), {ah:.5f} (hybridtree); shells 1 .. {n // 2}:",
              " ".join(f"{r:.4f}" for r in ratio))


if __name__ == "__main__":
    main()
