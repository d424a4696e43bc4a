"""Where every run's scheme is chosen (:func:`scheme_for`): the schemes of
:mod:`hybridtree.integrate.schemes` and the comoving ones (:mod:`.comoving`,
:mod:`.comoving_block`, which build on the former's pieces) meet here, above both, so that
no module of integrate/ imports in a circle."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from ..gravity.engine import GravitySettings
from .comoving import ComovingLeapfrog
from .comoving_block import ComovingBlock
from .schemes import BlockLeapfrog, BlockSettings, NestedLeapfrog

__all__ = ["Comoving", "scheme_for"]


@dataclass(frozen=True)
class Comoving:
    """A periodic box's comoving steps (:mod:`hybridtree.integrate.comoving`): ``sched``
    the run's :class:`hybridtree.integrate.schedule.Cosmic` (its background ``cosmo``
    and ``a(step)``), ``step`` the schedule's step the state is at, ``n_short`` the short
    steps per step (cosmology.short_steps), ``wrap``: positions wrapped into the box at
    each drift (one process; many processes wrap between steps).  The box's side is the
    engine's (``engine.g.periodic.box``)."""

    sched: Any
    step: int = 0
    n_short: int = 1
    wrap: bool = True


def scheme_for(g: GravitySettings, engine, external: float = 0.0,
               block: BlockSettings | None = None, combine=None,
               comoving: Comoving | None = None):
    """Every run's scheme, chosen here: a periodic box's comoving steps where
    ``comoving`` is given (in bins for the short range where ``block`` is given too,
    :class:`hybridtree.integrate.comoving_block.ComovingBlock`; else shared,
    :class:`hybridtree.integrate.comoving.ComovingLeapfrog`); else block steps where
    ``block`` is given (:class:`BlockLeapfrog`), the hybrid tree's nested steps where
    ``g`` has a split, or the plain leapfrog (:class:`NestedLeapfrog`).  ``external``:
    see :class:`NestedLeapfrog` (none in comoving coordinates); ``combine``: see
    :class:`BlockLeapfrog`."""
    if comoving is not None:
        if external:
            raise ValueError("comoving steps take no external acceleration (a box's "
                             "comoving coordinates have no Λ term)")
        sched = comoving.sched
        if block is not None:
            return ComovingBlock(engine, sched.cosmo, sched, comoving.step, block)
        return ComovingLeapfrog(engine, sched.cosmo, sched, comoving.step, comoving.n_short,
                                wrap=comoving.wrap)
    if block is not None:
        if g.changeover is not None:
            raise ValueError("block time steps do not take the hybrid tree's force split")
        return BlockLeapfrog(engine, block, external, combine)
    if g.changeover is None:
        return NestedLeapfrog(engine, external=external)
    return NestedLeapfrog(engine, inner="hard", outer="soft", n_inner=g.n_hard,
                          external=external)
