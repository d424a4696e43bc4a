"""The force engine of many processes: local tree, LETs, net force over all processes.

``compute(state, parts)`` as :class:`hybridtree.gravity.engine.ForceEngine`.  With the state on
the device (:class:`hybridtree.state.DeviceState`), per call:

1. every process's particle box (one small read back) is gathered, and the global
   power-of-two cube around them, so that every process's cells are cells of the
   one-process tree restricted to its particles;
2. the local tree is built on the device from the state's positions;
3. the LET for every other process's box is selected and compacted on the device
   (:mod:`.device_let`); only it is downloaded and sent (one Alltoallv).  A call for the
   hard part alone sends the hard LET (cells beyond r_out of the box left out); a call
   with the full or soft part sends the full LET, which both parts then share;
4. a tree of the local particles plus what arrived is built, and walked only by the sink
   groups that hold local particles (received entries are sources only); one tree
   serves every part of the call (the hybrid tree's last substep walks it twice);
5. the net force is removed with sums over all processes.

A periodic box (TreePM): the LET of step 3 is the short range's (nearest-image
distances, nothing beyond r_cut: :func:`.device_let.select_on_device` with ``box``), and
the processes share one mesh in slabs (``mesh_comm``, :class:`hybridtree.gravity.
long_range.LongRange`, :mod:`hybridtree.gravity.pm_slabs`).

``overlap`` (and hard substeps where ``hard_second_tree`` is set): the other way
to treat the received entries.  The LET travels with a non-blocking Alltoallv while the
local tree is walked for the local particles; then a tree of the received entries alone
is built and walked by the local tree's groups, and the two forces are added.  One build
of N + m particles becomes one of m, at the price of a second walk of every local group;
measured slower (docs/history.md, session 8).
With a host state the forces come from the host backend, each part's a force of host
arrays (:meth:`ParallelEngine.let_forces`: host LET selection, the stages of
:class:`.host_let.ParallelArrayBackend`), the path of devices without double precision
and of :func:`.forces.parallel_accelerations`.  The steps are stages
of the one force pipeline (:mod:`hybridtree.gravity.pipeline`) whose many-process
backends (:mod:`.backends`) override the tree, the exchange, the walks and the
reductions.  Everything else — settings, clock, kept buffers, counts, ``forces_known``,
the driver of ``compute`` — is the one-process engine's, which this one extends.  Units:
G = 1, the caller's.
"""

from __future__ import annotations

import time
from collections import defaultdict

import numpy as np

from ..device.clock import Clock
from ..device.runtime import Runtime
from ..device.transfer import Workspace
from ..gravity.engine import ForceEngine, GravitySettings
from ..gravity.parts import Part, as_part
from ..gravity.pipeline import drive
from ..gravity.tuning import TUNING, WalkTuning
from ..state import State
from .backends import ParallelDeviceBackend, ParallelHostBackend
from .comm import Comm
from .host_let import ParallelArrayBackend, ParallelArrays, ParallelForces

__all__ = ["ParallelEngine"]


class ParallelEngine(ForceEngine):
    """Forces of a state on many processes (module docstring): the one-process engine
    with backends that exchange LETs through ``comm``.  ``counts``: this process's
    interactions and forces per part, cumulative; ``step``: this step's force seconds,
    interactions (``work``) and LET volumes (entries, bytes sent).  Every force builds
    its trees (``refits`` off: ``gravity.refit_fraction`` is for one process).
    ``hard_second_tree``: whether hard substeps take the received hard LET as a second
    tree walked by the local groups (as ``overlap`` does) instead of one merged tree.  The
    hard LET is small, so its tree is cheap, but the merged tree was as fast at K = 2 and
    10 % faster at K = 4 (H100, 2^22, docs/history.md, session 8), so it is off.
    ``tuning``: the walks' switches (:class:`hybridtree.gravity.tuning.WalkTuning`).
    ``let_arrays``: the backend of forces of host arrays (:meth:`let_forces`)."""

    refits = False

    def __init__(self, g: GravitySettings, rt: Runtime, comm: Comm, clock: Clock | None = None,
                 overlap: bool = False, hard_second_tree: bool = False,
                 tuning: WalkTuning = TUNING):
        self.comm, self.overlap = comm, overlap
        super().__init__(g, rt, clock, tuning=tuning)
        self.mesh_comm = comm if comm.size > 1 else None     # a periodic box's mesh in slabs
        self.step: dict[str, float] = defaultdict(float)
        self.remote_work = Workspace(rt)       # the received LET's tree (overlap)
        self.hard_second_tree = hard_second_tree
        self.let_arrays = ParallelArrayBackend(self)

    def backends(self) -> tuple[ParallelDeviceBackend, ParallelHostBackend]:
        return ParallelDeviceBackend(self), ParallelHostBackend(self)

    def compute(self, state: State, parts: tuple[str | Part, ...], active=None) -> int:
        """As :meth:`hybridtree.gravity.engine.ForceEngine.compute` (collective: every process
        calls it, with or without active particles); returns this process's count of
        particles whose force was computed."""
        t0 = time.perf_counter()
        done = super().compute(state, parts, active)
        self.step["force"] += time.perf_counter() - t0
        return done

    def count(self, part: Part, interactions: int) -> None:
        super().count(part, interactions)
        self.step["work"] += interactions

    def sent(self, parts: tuple[Part, ...], entries: int, nbytes: int) -> None:
        """Count a LET sent for ``parts`` (the hard LET apart from the full one)."""
        key = "hard" if all(p.near_only for p in parts) else "soft"
        self.step[f"let_{key}_entries"] += entries
        self.step[f"let_{key}_bytes"] += nbytes

    def let_forces(self, pos: np.ndarray, mass: np.ndarray, part: str = "full"
                   ) -> ParallelForces:
        """Forces of ``part`` on this process's particles (validated float64 arrays) from
        every process's particles (collective), net force kept: the pipeline's stages
        through :attr:`let_arrays`.  See :func:`.forces.parallel_accelerations` for
        ``part`` and ``overlap``."""
        part = as_part(part)
        a = ParallelArrays(pos, mass)
        drive(self.let_arrays, a, (part,), None, False)
        return a.forces[part.name]
