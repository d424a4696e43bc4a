"""Time-stepping schemes: sequences of kicks, drifts and forces on a state.

One scheme serves both the plain and the hybrid tree: the nested kick-drift-kick
leapfrog.  A step of length Δt with an outer part (soft) and an inner part (hard, or
the whole force) taken in n_inner substeps of h = Δt / n_inner:

    kick(outer, Δt/2);
    n_inner × [kick(inner, h/2); drift(h); forces; kick(inner, h/2)];
    kick(outer, Δt/2)

with the forces of the last substep computing both parts from one tree.  The plain
leapfrog is the nested scheme with one substep, the whole force as the inner part and
no outer part: v += a Δt/2; x += v Δt; a = a(x); v += a Δt/2.  Both are symplectic and
time-reversible; the acceleration of the end of a step is reused at the start of the
next.  Units: internal (G = 1).
"""

from __future__ import annotations

from .engine import GravitySettings

__all__ = ["NestedLeapfrog", "scheme_for"]


class NestedLeapfrog:
    """The nested KDK leapfrog (module docstring) with a force engine that has
    ``compute(state, parts)``: the one-process engine or the MPI one."""

    def __init__(self, engine, inner: str = "full", outer: str | None = None,
                 n_inner: int = 1, external: float = 0.0):
        """``external``: the coefficient λ of an external acceleration λ x (the Λ term
        Ω_Λ H0² r of a cosmological sphere in physical coordinates; 0: none), kicked with
        the outer part (the slow, smooth one), or with the whole force of a plain run."""
        if n_inner < 1:
            raise ValueError(f"n_inner must be >= 1, got {n_inner}")
        self.engine, self.inner, self.outer, self.n_inner = engine, inner, outer, int(n_inner)
        self.external = float(external)

    @property
    def parts(self) -> tuple[str, ...]:
        return (self.inner,) if self.outer is None else (self.inner, self.outer)

    def start(self, state, reuse: bool = False) -> None:
        """Forces at the starting positions; ``reuse``: the state already holds the whole
        force of a plain run (a restart continues with it, bit for bit)."""
        if not (reuse and self.outer is None):
            self.engine.compute(state, self.parts)

    def step(self, state, dt: float) -> None:
        """One step of ``dt`` (the soft step of a hybrid run)."""
        h = dt / self.n_inner
        if self.outer is not None:
            self._kick_outer(state, 0.5 * dt)
        for k in range(self.n_inner):
            self._kick_inner(state, 0.5 * h)
            state.drift(h)
            last = k == self.n_inner - 1
            self.engine.compute(state, self.parts if last else (self.inner,))
            self._kick_inner(state, 0.5 * h)
        if self.outer is not None:
            self._kick_outer(state, 0.5 * dt)

    def _kick_outer(self, state, dt: float) -> None:
        state.kick(self.outer, dt)
        if self.external:
            state.kick_linear(self.external, dt)

    def _kick_inner(self, state, dt: float) -> None:
        state.kick(self.inner, dt)
        if self.external and self.outer is None:
            state.kick_linear(self.external, dt)


def scheme_for(g: GravitySettings, engine, external: float = 0.0) -> NestedLeapfrog:
    """The plain leapfrog, or the hybrid tree's nested steps where ``g`` has a split;
    ``external``: see :class:`NestedLeapfrog`."""
    if g.changeover is None:
        return NestedLeapfrog(engine, external=external)
    return NestedLeapfrog(engine, inner="hard", outer="soft", n_inner=g.n_hard,
                          external=external)
