"""The force parts a state holds, as values that know what their force is made of.

A run's force is one part ("full") or the sum of two: the hybrid tree's "hard" and
"soft" (:mod:`.splitting`; different steps), or TreePM's "short" and "long" (GADGET's
time split: the tree's short range and the mesh alone).  Everything that differs
between parts is a property of :class:`Part` here — which walk it runs (its kernel
defines), whether it writes the potential, whether a periodic box's mesh adds to it,
whether it is walked at all, and whether its walk reaches beyond r_out — so that the
engines and walks ask the part instead of comparing names.  Names stay at the boundary:
a state's ``acc[name]``, the counts' ``<name>_forces`` and the clock's ``walk_<name>``.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from types import MappingProxyType

__all__ = ["FULL", "HARD", "LONG", "PARTS", "Part", "SHORT", "SOFT", "as_part", "as_parts",
           "column_parts", "whole_part"]


@dataclass(frozen=True)
class Part:
    """One force part.  ``split``: the SPLIT define of its walk (0: the whole pair force,
    1: the soft fraction W(r), 2: the hard one 1 - W(r), which skips cells beyond r_out
    unopened); ``walked``: whether a tree walk makes it (the long range is the mesh
    alone); ``potential``: whether it writes the state's potential (the hard walk's is
    meaningless; the long part's mesh potential adds to the short's); ``mesh``: whether
    a periodic box's long range is added to it (not to the short range);
    ``column``: the diagnostics column its walks count in ("soft": a plain run's whole
    force stands for the soft one; None: none)."""

    name: str
    split: int = 0
    walked: bool = True
    potential: bool = True
    mesh: bool = True
    column: str | None = None

    def __str__(self) -> str:
        return self.name

    @property
    def walk_key(self) -> str:
        """The clock's name of its walk."""
        return f"walk_{self.name}"

    @property
    def near_only(self) -> bool:
        """Whether its walk skips cells beyond the changeover's r_out (the hard part): a
        LET for it may leave them out."""
        return self.split == 2

    def defines(self, changeover) -> dict[str, object]:
        """Its walk's defines of the force split (none for an unsplit walk); ValueError
        for a split part without a changeover."""
        if not self.split:
            return {}
        if changeover is None:
            raise ValueError(f"part = {self.name!r} needs a changeover (split)")
        return changeover.defines(self.split)


FULL = Part("full", column="soft")
SOFT = Part("soft", split=1, column="soft")
HARD = Part("hard", split=2, potential=False, column="hard")
#: TreePM's short range walks as the full force (the periodic kernel cuts it at r_cut)
SHORT = Part("short", mesh=False)
#: the mesh alone: no walk; its potential adds to the short's
LONG = Part("long", walked=False)

#: Every part, by name (the order of the diagnostics' sums: soft before full).
PARTS: Mapping[str, Part] = MappingProxyType({p.name: p for p in (SOFT, HARD, FULL, SHORT, LONG)})


def as_part(part: Part | str) -> Part:
    """``part`` as a :class:`Part` (a name: KeyError-free check, ValueError if unknown)."""
    if isinstance(part, Part):
        return part
    try:
        return PARTS[part]
    except KeyError:
        raise ValueError(f"part must be one of {', '.join(PARTS)}, got {part!r}") from None


def as_parts(parts) -> tuple[Part, ...]:
    """A tuple of parts or names as a tuple of :class:`Part`."""
    return tuple(as_part(p) for p in parts)


def whole_part(periodic: bool) -> Part:
    """The part that is a particle's whole tree force (that of an active particle in a
    block step): a periodic box's short range, else the full force."""
    return SHORT if periodic else FULL


def column_parts(column: str) -> tuple[Part, ...]:
    """The parts counted in a diagnostics column (:attr:`Part.column`), in sum order."""
    return tuple(p for p in PARTS.values() if p.column == column)
