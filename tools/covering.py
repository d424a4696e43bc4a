"""Strength-2 covering arrays: a few rows of a product that hold every pair of values.

A covering array of strength 2 over axes (each a tuple of values) is a set of rows (one
value per axis) in which every value of every axis, and every pair of values of two
axes, occurs in some row.  Where some rows of the full product are not allowed (the walk
refuses combinations it never launches), the pairs to cover are the pairs of the allowed
rows: a pair that only refused rows hold is never compiled by anyone.

:func:`cover` picks the rows greedily (each time the allowed row that holds the most
pairs not yet held, the first such in the product's order: deterministic);
:func:`axis_pairs` says which values and pairs of values each row holds, as a matrix
(numpy: the walk's product has ~10^4 rows of ~10^2 pairs each, which Python sets took
seconds per device to name).  :func:`define_cover` does the same for a list of programs
(a file and its defines: each define name an axis, a define a program lacks the value
"absent").  tests/tools/test_vendor_compile.py checks the property on the result itself,
with its own count of the pairs.
"""

from __future__ import annotations

from collections.abc import Hashable, Sequence

import numpy as np

__all__ = ["axis_pairs", "cover", "cover_matrix", "define_cover"]


def axis_pairs(index: np.ndarray, sizes: Sequence[int]) -> np.ndarray:
    """Which features each row of ``index`` (rows x axes: the value's position on each
    axis, axis k having ``sizes[k]`` values) holds, as a boolean matrix (rows x features):
    every value of every axis, then every pair of values of two axes (i < j).  Features
    no row holds are columns of False (:func:`cover_matrix` leaves them out)."""
    index = np.asarray(index, dtype=np.int64).reshape(len(index), len(sizes))
    codes, offset = [], 0
    for k, n in enumerate(sizes):
        codes.append(offset + index[:, k])
        offset += n
    for i, ni in enumerate(sizes):
        for j in range(i + 1, len(sizes)):
            codes.append(offset + index[:, i] * sizes[j] + index[:, j])
            offset += ni * sizes[j]
    held = np.zeros((len(index), offset), dtype=bool)
    if codes:
        held[np.arange(len(index))[:, None], np.stack(codes, axis=1)] = True
    return held


def cover(features: Sequence[set[Hashable]]) -> list[int]:
    """Indices (ascending) of rows whose features together hold the features of all
    ``features`` (one set per allowed row, in the product's order): greedily, each time
    the row that holds the most features not held yet, the first such on ties."""
    ids: dict[Hashable, int] = {}
    for f in features:
        for x in f:
            ids.setdefault(x, len(ids))
    held = np.zeros((len(features), len(ids)), dtype=bool)
    for r, f in enumerate(features):
        held[r, [ids[x] for x in f]] = True
    return cover_matrix(held)


def cover_matrix(held: np.ndarray) -> list[int]:
    """:func:`cover` of a boolean matrix (rows x features: ``held[r, f]``, row r holds
    feature f); features no row holds are not asked for."""
    held = np.asarray(held, dtype=bool)
    todo = held.any(axis=0)
    held = held[:, todo]
    gain = held.sum(axis=1, dtype=np.int64)        # features of each row not held yet
    todo = np.ones(held.shape[1], dtype=bool)
    chosen: list[int] = []
    while todo.any():
        r = int(np.argmax(gain))              # first row of the largest gain
        chosen.append(r)
        new = todo & held[r]
        todo &= ~new
        gain -= held[:, new].sum(axis=1, dtype=np.int64)
    return sorted(chosen)


def define_cover(programs: Sequence[tuple[str, tuple[tuple[str, str], ...]]]) -> list[int]:
    """Indices (ascending) of a strength-2 covering array of ``programs`` ((file, sorted
    (name, value) defines), distinct): per file, its define names are the axes (a program
    without a define holds the value "absent" of that axis), and the chosen programs hold
    every value of every axis and every pair of values of two axes that the file's
    programs hold (:func:`cover_matrix`); every file keeps at least one program."""
    by_file: dict[str, list[int]] = {}
    for i, (file, _) in enumerate(programs):
        by_file.setdefault(file, []).append(i)
    chosen: list[int] = []
    for rows in by_file.values():
        defines = [dict(programs[i][1]) for i in rows]
        names = sorted({k for d in defines for k in d})
        values = [sorted({d.get(k) for d in defines}, key=repr) for k in names]
        index = np.array([[values[a].index(d.get(k)) for a, k in enumerate(names)]
                          for d in defines], dtype=np.int64).reshape(len(rows), len(names))
        picked = cover_matrix(axis_pairs(index, [len(v) for v in values]))
        chosen += [rows[r] for r in (picked or [0])]
    return sorted(chosen)
