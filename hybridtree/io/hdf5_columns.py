"""A snapshot's particles as :mod:`hybridtree.io.hdf5_write` takes them: a chunk of rows
at a time (:class:`ParticleChunks`), so that a writer fed by a device state holds one
chunk on the host, not the whole snapshot (host particles are one chunk: no copy), and
the datasets' values of a chunk (:func:`column_values`).

Every conversion is elementwise and the rows of a type keep their order, so the values
are those written in one piece, bit for bit.  Units internal (G = 1)."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Callable, Iterator

import numpy as np

from ..config.units import Units
from ..particles import Particles
from .gadget_units import CosmicHeader
from .hdf5_files import N_TYPES

__all__ = ["BOX_STATE", "ROWS", "ParticleChunks", "as_chunks", "chunks_of", "column_values",
           "of_type"]

#: particles per chunk of a streamed snapshot: about 400 MB of host arrays (97 bytes a
#: particle), a few seconds of a GPU's transfers; small against 2^30 particles' 100 GB
ROWS = 4 << 20

#: the dataset of a cosmological run's snapshot (a periodic box's or an expanding
#: sphere's) that holds its exact state (the name is the one box snapshots had first)
BOX_STATE = "HybridtreeBoxState"


@dataclass
class ParticleChunks:
    """Particles handed to a snapshot writer in chunks: ``n`` rows, ``counts`` of each
    GADGET type among them, ``fetch(lo, hi)`` the rows lo .. hi - 1 (float64, internal
    units; acc and pot present where ``has_acc``/``has_pot``), ``rows`` at most per
    chunk."""

    n: int
    counts: np.ndarray
    fetch: Callable[[int, int], Particles]
    has_acc: bool = True
    has_pot: bool = True
    rows: int = ROWS

    def chunks(self) -> Iterator[Particles]:
        for lo in range(0, self.n, max(self.rows, 1)):
            yield self.fetch(lo, min(self.n, lo + self.rows))


def as_chunks(p: Particles | ParticleChunks) -> ParticleChunks:
    """``p`` as chunks: host particles are one chunk, the arrays themselves."""
    if isinstance(p, ParticleChunks):
        return p
    counts = np.bincount(p.types, minlength=N_TYPES).astype(np.uint64)
    return ParticleChunks(len(p), counts, lambda lo, hi: p, p.acc is not None,
                          p.pot is not None, rows=max(len(p), 1))


def of_type(p: Particles, t: int) -> Particles:
    """The particles of type ``t`` (all of them, without copies, where they all are)."""
    if len(p) and p.types.min() == p.types.max() == t:
        return p
    rows = p.types == t
    return Particles(p.pos[rows], p.vel[rows], p.mass[rows], p.ids[rows],
                     None if p.acc is None else p.acc[rows],
                     None if p.pot is None else p.pot[rows], p.types[rows])


def chunks_of(state: Any, rows: int | None = None) -> ParticleChunks | None:
    """A device state (:class:`hybridtree.state.DeviceState`) of more than ``rows``
    (default :data:`ROWS`) particles as chunks of its rows (``download_rows``); None for
    a host state or a small one, downloaded whole (and then possibly written in the
    background while the run goes on).  Why: 2^30 particles' host copies are 100 GB."""
    rows = ROWS if rows is None else rows
    if getattr(state, "backend", "host") != "device" or state.n <= rows:
        return None
    return ParticleChunks(state.n, state.type_counts().astype(np.uint64),
                          state.download_rows, rows=rows)


def column_values(p: Particles, units: Units, cosmic: CosmicHeader | None,
            box: float | None) -> dict[str, np.ndarray]:
    """The datasets' float64 values of particles ``p``: a cosmological run's in GADGET's
    convention (:func:`hybridtree.io.hdf5_write.write_snapshot`); ``state``
    the exact state of a cosmological run (:data:`BOX_STATE`)."""
    pos, vel, mass = p.pos, p.vel, p.mass
    if cosmic is not None:
        a, h = cosmic.a, cosmic.h
        if box is None:
            vel = (vel - cosmic.hubble(units.time_s) * pos) / np.sqrt(a)
            pos = pos * (h / a)
        else:               # comoving x and p = a² dx/dt: v_pec = p / a
            vel = vel / (a * np.sqrt(a))
            pos = pos * h
        mass = mass * h
    out = {"pos": pos, "vel": vel, "mass": mass, "ids": p.ids.astype(np.uint64, copy=False),
           "pot": p.pot, "acc": p.acc}
    if cosmic is not None:
        out["state"] = np.column_stack([p.pos, p.vel, p.mass]).astype(np.float64)
    return out
