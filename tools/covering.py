"""Strength-2 covering arrays: a few rows of a product that hold every pair of values.

A covering array of strength 2 over axes (each a tuple of values) is a set of rows (one
value per axis) in which every value of every axis, and every pair of values of two
axes, occurs in some row.  Where some rows of the full product are not allowed (the walk
refuses combinations it never launches), the pairs to cover are the pairs of the allowed
rows: a pair that only refused rows hold is never compiled by anyone.

:func:`cover` picks the rows greedily (each time the allowed row that holds the most
pairs not yet held, the first such in the product's order: deterministic) and
:func:`pairs` names what a row holds; tests/tools/test_vendor_compile.py checks the
property on the result itself.
"""

from __future__ import annotations

from collections.abc import Hashable, Iterable, Sequence

import numpy as np

__all__ = ["cover", "pairs"]

Row = tuple[int, ...]                   # one index into each axis's values


def pairs(row: Row, extra: Iterable[Hashable] = ()) -> set[Hashable]:
    """What ``row`` holds: every value of it, ``(axis, value index)``, and every pair of
    them from two axes, ``((i, a), (j, b))`` with i < j; plus ``extra`` features (the
    caller's: e.g. the kernel defines the row's builds set)."""
    items = list(enumerate(row))
    out: set[Hashable] = set(items)
    out.update((p, q) for k, p in enumerate(items) for q in items[k + 1:])
    out.update(extra)
    return out


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
    gain = held.sum(axis=1, dtype=np.int64)        # features of each row not held yet
    todo = np.ones(len(ids), dtype=bool)
    chosen: list[int] = []
    while todo.any():
        r = int(np.argmax(gain))              # first row of the largest gain
        chosen.append(r)
        new = todo & held[r]
        todo &= ~new
        gain -= held[:, new].sum(axis=1, dtype=np.int64)
    return sorted(chosen)
