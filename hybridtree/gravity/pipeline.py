"""The force pipeline: one driver of named stages, one backend object per way of computing.

A force of a state goes through the same stages whatever computes it (:func:`drive`):

1. ``sources``: what the force is of — the opening criterion (:mod:`.criterion`), the
   sinks (all particles, or the active ones of a block step) — as a :class:`Job`, or
   the count of forces done where there is nothing to walk;
2. ``tree``: the tree of the sources (built, or the kept one refitted);
3. ``exchange``: what other processes send (one process: nothing);
4. ``walk`` of each force part (:mod:`.parts`), then its ``long_range`` (a periodic
   box's mesh, where the part takes it) and ``reduce_part`` (its counts, and its net
   force where that needs no other process); an active force walks once
   (``walk_active``) and stops there (no mesh, no net force: a partial force's net
   force is real);
5. ``received``: what arrived while the local tree was walked (``overlap``: walked now);
6. ``reduce``: the reductions over all parts (many processes: one allreduce).

A backend implements the stages for where the state lives
(:mod:`.backends`: device, host; sinks given as arrays, whose state is an
:class:`.arrays.Arrays` value: :mod:`.arrays`); many processes override what they change
(:mod:`hybridtree.parallel.backends`: the tree in a global cube, the LET exchange,
the reductions).  The stages enqueue the same kernels in the same order as one loop
would: the driver adds no launch, wait or transfer.  Units: G = 1, the state's.
"""

from __future__ import annotations

import weakref
from dataclasses import dataclass, field
from typing import Any

from .criterion import Criterion
from .forces import Active
from .parts import Part

__all__ = ["Backend", "Job", "drive"]


@dataclass
class Job:
    """One force in flight through the stages: the ``state``, its ``parts``, ``active``
    (None: all particles), the opening ``criterion``, ``n`` (how many sinks' forces it
    computes), the ``tree`` walked, and what a backend keeps between its stages
    (``pot``: each part's potential buffer or array; ``extra``: the backend's own)."""

    state: Any
    parts: tuple[Part, ...]
    active: Active | None
    criterion: Criterion
    n: int
    tree: Any = None
    pot: dict = field(default_factory=dict)
    extra: dict = field(default_factory=dict)


class Backend:
    """The stages of a force for one kind of state (module docstring); ``engine``: the
    :class:`hybridtree.gravity.engine.ForceEngine` whose settings, clock, buffers and
    counts it uses.  The defaults are one process's: no exchange, nothing received, no
    reduction over all parts."""

    def __init__(self, engine):
        # a weak reference: the engine holds its backends, and a cycle would keep its
        # buffers (the tree, the lists: most of a run's device memory) until the
        # garbage collector ran, not when the run is let go
        self.engine = weakref.proxy(engine)

    def sources(self, state, parts: tuple[Part, ...], active: Active | None) -> Job | int:
        raise NotImplementedError

    def tree(self, job: Job) -> None:
        raise NotImplementedError

    def exchange(self, job: Job) -> None:
        """One process: nothing to exchange."""

    def walk_active(self, job: Job) -> int:
        raise NotImplementedError

    def walk(self, job: Job, part: Part) -> None:
        raise NotImplementedError

    def long_range(self, job: Job, part: Part) -> None:
        raise NotImplementedError

    def reduce_part(self, job: Job, part: Part) -> None:
        """Nothing by default."""

    def received(self, job: Job) -> None:
        """One process: nothing arrives late."""

    def reduce(self, job: Job) -> None:
        """Nothing by default."""


def drive(backend: Backend, state, parts: tuple[Part, ...], active: Active | None,
          periodic: bool) -> int:
    """The stages of one force (module docstring) through ``backend``; ``periodic``: a
    periodic box (its mesh adds to the parts that take it).  Returns the number of
    particles whose force was computed."""
    job = backend.sources(state, parts, active)
    if isinstance(job, int):
        return job
    backend.tree(job)
    backend.exchange(job)
    if job.active is not None:
        return backend.walk_active(job)
    for part in job.parts:
        backend.walk(job, part)
        if periodic and part.mesh:
            backend.long_range(job, part)
        backend.reduce_part(job, part)
    backend.received(job)
    backend.reduce(job)
    return job.n
