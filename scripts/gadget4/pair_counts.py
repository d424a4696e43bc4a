"""Cumulative pair counts of z = 0 snapshots against a reference snapshot (periodic, scipy's
cKDTree): where in separation two runs' clustering differs.

    python scripts/gadget4/pair_counts.py REFERENCE.hdf5 OTHER.hdf5 [OTHER2.hdf5 ...]

Prints (pairs within r in OTHER - N) / (the same in REFERENCE) at 16 separations from 0.02
to 10 box-length units (Mpc/h for GADGET-4 and hybridtree boxes).  Reads PartType1 only
(a single-file snapshot).
"""

import sys

import h5py
import numpy as np
from scipy.spatial import cKDTree


def pairs_within(path: str, r: np.ndarray) -> np.ndarray:
    with h5py.File(path) as f:
        box = float(f["Header"].attrs["BoxSize"])
        x = np.mod(f["PartType1/Coordinates"][:], box)
    tree = cKDTree(x, boxsize=box)
    return tree.count_neighbors(tree, r) - len(x)       # without each particle's self-pair


def main(argv: list[str]) -> None:
    r = np.geomspace(0.02, 10.0, 16)
    ref = pairs_within(argv[0], r)
    print("r        " + " ".join(f"{v:7.3f}" for v in r))
    for path in argv[1:]:
        print(f"{path}\n         " + " ".join(f"{v:7.3f}" for v in pairs_within(path, r) / ref))


if __name__ == "__main__":
    main(sys.argv[1:])
