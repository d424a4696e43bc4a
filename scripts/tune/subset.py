#!/usr/bin/env python
"""What a substep of a cusp's inner particles costs as a block substep and as a force of
a tree of those particles alone (a tuning aid for issue 30, not a test).

A block substep (:mod:`hybridtree.integrate.timebins`) forces its active particles from
a tree of all N (built anew or refitted); GADGET-4's hierarchical time integration
forces the particles of bins >= k from a tree of those particles only.  For each
fraction F the innermost F of a Hernquist halo with a satellite (about the deepest bins
of ``timesteps.py steps``' block run: 14 % in bin 5, 51 % in bins >= 4) are made active
and timed both ways with the force engine (geometric θ = 0.5 monopoles, the bare engine's
"auto"; ``--alpha``: the relative criterion), median of ``REPEATS``, the host's clock
around ``compute``, each after a drift of 1e-4.  ``--by acc``: the fraction with the
largest |a| of a first full force instead (the shortest time steps, eta sqrt(eps / |a|):
the particles a block step makes active); ``--model plummer``: a Plummer sphere.

    PYTHONPATH=. python scripts/tune/subset.py 4194304 0.14 0.51 [--repeats 5] [--alpha A]
        [--by radius|acc] [--model cusp|plummer] [--no-alone]
"""

from __future__ import annotations

import argparse
import time

import numpy as np

from hybridtree.device.choice import get_runtime
from hybridtree.device.clock import Clock
from hybridtree.gravity.engine import ForceEngine, GravitySettings
from hybridtree.ics import hernquist_satellite, plummer
from hybridtree.state import make_state
from hybridtree.particles import Particles


def timed(rt, eng, s, repeats: int, active=None) -> tuple[float, int]:
    """Median seconds of ``repeats`` forces (after one untimed) and the interactions of
    one."""
    times = []
    for r in range(repeats + 1):
        s.drift(1e-4)
        rt.queue.finish()
        before = eng.counts["interactions"]
        t0 = time.perf_counter()
        eng.compute(s, ("full",), active=active)
        rt.queue.finish()
        if r:
            times.append(time.perf_counter() - t0)
        inter = eng.counts["interactions"] - before
    return float(np.median(times)), int(inter)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("n", type=int)
    ap.add_argument("fractions", type=float, nargs="+")
    ap.add_argument("--repeats", type=int, default=5)
    ap.add_argument("--alpha", type=float, help="the relative criterion (default geometric)")
    ap.add_argument("--by", choices=("radius", "acc"), default="radius")
    ap.add_argument("--model", choices=("cusp", "plummer"), default="cusp")
    ap.add_argument("--no-alone", action="store_true", help="skip the tree of the active alone")
    args = ap.parse_args()
    crit = {} if args.alpha is None else {"opening": "relative", "alpha": args.alpha}
    rt = get_runtime()
    pos, vel, mass = (hernquist_satellite if args.model == "cusp" else plummer)(args.n, seed=1)
    ids = np.arange(1, args.n + 1, dtype=np.uint64)
    if args.by == "radius":
        key = -np.linalg.norm(pos - np.average(pos, axis=0, weights=mass), axis=1)
    else:
        eng = ForceEngine(GravitySettings(eps=0.01, **crit), rt, Clock(rt))
        s = make_state(Particles(pos, vel, mass, ids), ("full",), "device", rt, eng.clock)
        eng.compute(s, ("full",))
        key = np.linalg.norm(s.download().acc, axis=1)
    print(f"# {rt.info.label}  N={args.n}  eps=0.01  {args.model}  active by {args.by}  "
          f"{'theta=0.5' if args.alpha is None else f'alpha={args.alpha}'}", flush=True)
    for frac in args.fractions:
        inner = key >= np.quantile(key, 1.0 - frac)     # the innermost, or largest |a|
        bins_host = inner.astype(np.int32)            # active: bin >= 1
        for refit in (0.0, 100.0):
            g = GravitySettings(eps=0.01, refit_fraction=refit, **crit)
            eng = ForceEngine(g, rt, Clock(rt))
            s = make_state(Particles(pos, vel, mass, ids), ("full",), "device", rt, eng.clock)
            eng.compute(s, ("full",))                 # a full force first (a_old)
            bins = rt.to_device(bins_host)
            sec, inter = timed(rt, eng, s, args.repeats, (bins, 1))
            label = "refitted" if refit else "built anew"
            print(f"F={frac:.3f} active={int(inner.sum())} block substep, tree of all N "
                  f"{label}: {1e3 * sec:.2f} ms, {inter / inner.sum():.0f} interactions "
                  f"per active particle", flush=True)
        if not args.no_alone:
            eng = ForceEngine(GravitySettings(eps=0.01, **crit), rt, Clock(rt))
            sub = Particles(pos[inner], vel[inner], mass[inner], ids[inner])
            s = make_state(sub, ("full",), "device", rt, eng.clock)
            eng.compute(s, ("full",))
            sec, inter = timed(rt, eng, s, args.repeats)
            print(f"F={frac:.3f} active={int(inner.sum())} tree of the active alone: "
                  f"{1e3 * sec:.2f} ms, {inter / inner.sum():.0f} interactions per particle",
                  flush=True)
        full_eng = ForceEngine(GravitySettings(eps=0.01, **crit), rt, Clock(rt))
        s = make_state(Particles(pos, vel, mass, ids), ("full",), "device", rt, full_eng.clock)
        full_eng.compute(s, ("full",))
        sec, inter = timed(rt, full_eng, s, args.repeats)
        print(f"F={frac:.3f} full force of all N: {1e3 * sec:.2f} ms", flush=True)


if __name__ == "__main__":
    main()
