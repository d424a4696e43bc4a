#!/usr/bin/env python
"""Issue 57's investigation (not a test, not part of the package): does a hierarchical
(HOLD-like) splitting of the block steps remove the block steps' energy drift?

    PYTHONPATH=. python scripts/tune/probe_hold.py --n 2048 --t-end 2.5 --json /tmp/hold.jsonl

Forces are float64 direct sums (numpy, Plummer softening --eps) so that no tree error
enters: what differs between the runs is the integrator alone.  Schemes, each on the cusp
(Hernquist halo with a satellite), largest step --dt:

- ``shared``: the KDK leapfrog at dt / 2^k;
- ``block``: the code's block steps (:class:`hybridtree.integrate.schemes.BlockLeapfrog`'s
  order): every particle drifts to every tick, the active particles take the force of all
  particles, close their step, take a new bin, open the next;
- ``hold``: the hierarchical splitting (Pelupessy, Jänes & Portegies Zwart 2012's HOLD;
  GADGET-4's HIERARCHICAL_GRAVITY): at level k the set S_k of particles in bins >= k is
  split into its slow part (bin k) and its fast part F = S_{k+1}; the level kicks with
  the forces of S_k on S_k less those of F on F (which the deeper level integrates),
  drifts its slow part by the whole step and evolves F by two half steps.  Every
  interaction is kicked with the same step on both of its sides, so momentum is kept
  exactly, and each level is a leapfrog of a split Hamiltonian: symplectic while the
  bins do not change.

The bins of both follow dt = eta sqrt(eps / |a|) (a: the particle's whole acceleration;
in ``hold`` the sum of its levels' parts at their last forces).  Work is counted as
forces per particle (the sinks of all force calls over N) and, for ``hold``, pairs per
N^2 (its sources are the level's set, not all N).
"""

from __future__ import annotations

import argparse
import json
import math
import sys
import time
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parents[2]))

from hybridtree.ics import hernquist_satellite  # noqa: E402
from probe_bins import cusp_options  # noqa: E402


class Direct:
    """float64 direct sums (G = 1, Plummer softening), counting the work."""

    def __init__(self, mass: np.ndarray, eps: float):
        self.mass, self.eps2 = mass, eps * eps
        self.sinks = 0
        self.pairs = 0

    def acc(self, pos: np.ndarray, sinks: np.ndarray, sources: np.ndarray | None = None
            ) -> np.ndarray:
        """The acceleration of ``sinks`` (rows) from ``sources`` (rows; None: all)."""
        src = pos if sources is None else pos[sources]
        m = self.mass if sources is None else self.mass[sources]
        out = np.empty((len(sinks), 3))
        for a in range(0, len(sinks), 256):
            x = pos[sinks[a:a + 256]]
            d = src[None, :, :] - x[:, None, :]
            r2 = np.einsum("ijk,ijk->ij", d, d) + self.eps2
            w = m / (r2 * np.sqrt(r2))
            out[a:a + 256] = np.einsum("ij,ijk->ik", w, d)
        self.sinks += len(sinks)
        self.pairs += len(sinks) * len(src)
        return out

    def energy(self, pos: np.ndarray, vel: np.ndarray) -> float:
        kin = 0.5 * float(np.sum(self.mass * np.einsum("ij,ij->i", vel, vel)))
        pot = 0.0
        for a in range(0, len(pos), 256):
            d = pos[None, :, :] - pos[a:a + 256, None, :]
            r2 = np.einsum("ijk,ijk->ij", d, d) + self.eps2
            pot -= float(np.sum(self.mass[a:a + 256, None] * self.mass[None, :] / np.sqrt(r2)))
        # the self pairs (r = 0) gave m^2 / eps each: not part of the potential
        pot += float(np.sum(self.mass ** 2)) / math.sqrt(self.eps2)
        return kin + 0.5 * pot


def bins_of(a: np.ndarray, dt: float, eta: float, eps: float, kmin: int, kmax: int) -> np.ndarray:
    """The smallest k >= kmin with dt / 2^k <= eta sqrt(eps / |a|) (clipped at kmax)."""
    q = dt * dt * np.linalg.norm(a, axis=1) / (eta * eta * eps)
    k = np.ceil(0.5 * np.log2(np.maximum(q, 1.0))).astype(np.int64)
    return np.clip(k, kmin, kmax)


def run_shared(pos, vel, f: Direct, dt: float, steps: int, every: int, on_out) -> None:
    everyone = np.arange(len(pos))
    a = f.acc(pos, everyone)
    for s in range(steps):
        vel += 0.5 * dt * a
        pos += dt * vel
        a = f.acc(pos, everyone)
        vel += 0.5 * dt * a
        if (s + 1) % every == 0:
            on_out(pos, vel)


def run_block(pos, vel, f: Direct, dt: float, big: int, eta: float, eps: float, kmax: int,
              on_out, rebin: str = "substep") -> None:
    """``rebin``: substep (a particle takes a new bin at each of its synchronisations,
    the code's rule), deepen (there only a deeper one; a larger step only at the largest
    step's end) or step (bins kept through each largest step)."""
    n = len(pos)
    everyone = np.arange(n)
    a = f.acc(pos, everyone)
    ticks = 1 << kmax
    for _ in range(big):
        bins = bins_of(a, dt, eta, eps, 0, kmax)
        vel += (0.5 * dt / 2.0 ** bins)[:, None] * a
        ti = 0
        while ti < ticks:
            span = 1 << (kmax - int(bins.max()))
            nxt = (ti // span + 1) * span
            pos += (dt * (nxt - ti) / ticks) * vel
            ti = nxt
            kmin = 0 if ti % ticks == 0 else kmax - ((ti & -ti).bit_length() - 1)
            act = np.flatnonzero(bins >= kmin)
            a[act] = f.acc(pos, act)
            vel[act] += (0.5 * dt / 2.0 ** bins[act])[:, None] * a[act]
            if ti < ticks:
                if rebin == "substep":
                    bins[act] = bins_of(a[act], dt, eta, eps, kmin, kmax)
                elif rebin == "deepen":
                    bins[act] = np.maximum(bins[act], bins_of(a[act], dt, eta, eps, kmin, kmax))
                vel[act] += (0.5 * dt / 2.0 ** bins[act])[:, None] * a[act]
        on_out(pos, vel)


class Hold:
    """The hierarchical splitting (module docstring).  ``parts[k]``: the acceleration of
    S_k on S_k (valid on the rows of S_k) at the last force of level k."""

    def __init__(self, pos, vel, f: Direct, eta: float, eps: float, kmax: int,
                 fresh: bool = True):
        self.fresh = fresh
        self.pos, self.vel, self.f = pos, vel, f
        self.eta, self.eps, self.kmax = eta, eps, kmax
        n = len(pos)
        self.parts = np.zeros((kmax + 2, n, 3))
        self.bins = np.zeros(n, np.int64)
        self.all = np.arange(n)
        self.parts[0] = f.acc(pos, self.all)
        self.known: dict[int, np.ndarray] = {}      # level: the rows its part is current on

    def whole(self, rows: np.ndarray, k: int, outer: np.ndarray) -> np.ndarray:
        """The whole acceleration of ``rows`` (S_k): level k's part now plus ``outer``,
        what the coarser levels kick them with (each level j's part less level j + 1's,
        both as of level j's last opening).  ``fresh`` False: the whole force of the
        largest step's start (the bins then change only there)."""
        if not self.fresh:
            return self.parts[0][rows]
        return self.parts[k][rows] + outer

    def step(self, dt: float) -> None:
        self.level(self.all, 0, dt, np.zeros((len(self.all), 3)))

    def _kick(self, s: np.ndarray, fast: np.ndarray, k: int, h: float) -> None:
        a = self.parts[k][s]
        a[fast] -= self.parts[k + 1][s[fast]]
        self.vel[s] += h * a

    def level(self, s: np.ndarray, k: int, dt: float, outer: np.ndarray) -> None:
        """Evolve the set ``s`` (S_k, its part of level k known now; ``outer``: see
        :meth:`whole`, aligned with ``s``) by ``dt``."""
        self.bins[s] = bins_of(self.whole(s, k, outer), dt * 2.0 ** k, self.eta, self.eps,
                               k, self.kmax)
        fast = self.bins[s] > k
        f_rows = s[fast]
        # the deeper level's last force is current where F kept its rows (nothing moved since)
        if len(f_rows) and not np.array_equal(self.known.get(k + 1), f_rows):
            self.parts[k + 1][f_rows] = self.f.acc(self.pos, f_rows, f_rows)
        self._kick(s, fast, k, 0.5 * dt)
        if len(f_rows):
            deeper = outer[fast] + self.parts[k][f_rows] - self.parts[k + 1][f_rows]
            self.level(f_rows, k + 1, 0.5 * dt, deeper)
            self.level(f_rows, k + 1, 0.5 * dt, deeper)
        slow = s[~fast]
        self.pos[slow] += dt * self.vel[slow]
        self.parts[k][s] = self.f.acc(self.pos, s, None if k == 0 else s)
        self.known[k] = s
        self._kick(s, fast, k, 0.5 * dt)


def main(argv=None) -> None:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    cusp_options(p, 2048, 2.5)
    p.add_argument("--eta", type=float, nargs="*", default=[0.4, 0.2, 0.1])
    p.add_argument("--schemes", nargs="+", default=["block", "hold"],
                   help="block, hold, block-fixed (bins kept through each largest step), "
                   "block-deepen (within a largest step a bin only deepens), "
                   "hold-fixed (bins from the whole force at each largest step's start)")
    p.add_argument("--shared", type=int, nargs="*", default=[2, 3, 4])
    p.add_argument("--max-bin", type=int, default=10)
    p.add_argument("--json")
    args = p.parse_args(argv)
    pos0, vel0, mass = hernquist_satellite(args.n, seed=args.seed)
    big = int(round(args.t_end / args.dt))
    rows = []

    def one(what: str, go, **extra) -> None:
        pos, vel = pos0.astype(np.float64).copy(), vel0.astype(np.float64).copy()
        f = Direct(mass.astype(np.float64), args.eps)
        e0 = f.energy(pos, vel)
        errs = []
        t0 = time.perf_counter()
        go(pos, vel, f, lambda x, v: errs.append(f.energy(x, v) / e0 - 1.0))
        p_tot = np.sum(mass[:, None] * vel, axis=0)
        row = {"what": what, **extra, "wall_s": time.perf_counter() - t0,
               "energy_error": errs[-1], "energy_error_max": float(np.max(np.abs(errs))),
               "energy_error_mid": errs[len(errs) // 2 - 1],
               "trace": [float(e) for e in errs[len(errs) // 10 - 1::max(len(errs) // 10, 1)]],
               "forces_per_particle": f.sinks / args.n, "pairs_per_n2": f.pairs / args.n ** 2,
               "momentum": float(np.linalg.norm(p_tot)), "t_end": args.t_end, "n": args.n}
        rows.append(row)
        print(json.dumps(row), flush=True)
        if args.json:
            Path(args.json).write_text("".join(json.dumps(r) + "\n" for r in rows))

    for k in args.shared:
        m = 1 << k
        one("shared", lambda x, v, f, out: run_shared(x, v, f, args.dt / m, big * m, m, out), k=k)
    for eta in args.eta:
        for name in args.schemes:
            fixed = name.endswith("-fixed")
            rebin = "step" if fixed else "deepen" if name.endswith("-deepen") else "substep"
            if name.startswith("block"):
                one(name, lambda x, v, f, out: run_block(
                    x, v, f, args.dt, big, eta, args.eps, args.max_bin, out, rebin), eta=eta)
            else:
                def go(x, v, f, out):
                    h = Hold(x, v, f, eta, args.eps, args.max_bin, fresh=not fixed)
                    for _ in range(big):
                        h.step(args.dt)
                        out(x, v)
                one(name, go, eta=eta)


if __name__ == "__main__":
    main()
