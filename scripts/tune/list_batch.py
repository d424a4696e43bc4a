#!/usr/bin/env python
"""The list walk's batch budget (``WalkTuning.list_batch_bytes``,
:mod:`hybridtree.gravity.tuning`) against the step time and the lists' memory (a tuning
aid, not a test).

    PYTHONPATH=. python scripts/tune/list_batch.py --device nvidia --n 16777216 --gib 2 4 8 0
    PYTHONPATH=. python scripts/tune/list_batch.py --n 2048 --steps 2 --rounds 1

One process, one Plummer sphere (seed 1, Hénon units) stepped with ``hybridtree.Simulation``
(eps 0.01, dt 1/512, ``--theta``, monopoles; the other settings their defaults); for each
budget in turn (``--rounds`` times, alternating; 0 = the device's 1/8 share alone), the
engine's tuning set, the kept list buffer is let go, one step warms up, then ``--steps`` steps by the caller's clock,
and the ledger's peak of the lists' bytes over those steps.
"""

from __future__ import annotations

import argparse
import json
import time
from dataclasses import replace

from hybridtree.device import transfer
from hybridtree.gravity import list_walk


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--device", default="")
    p.add_argument("--n", type=int, default=1 << 16)
    p.add_argument("--gib", type=float, nargs="+", default=[2, 0])
    p.add_argument("--theta", type=float, default=0.5)
    p.add_argument("--steps", type=int, default=8)
    p.add_argument("--rounds", type=int, default=2)
    args = p.parse_args()
    import hybridtree
    from hybridtree.ics import plummer
    opts = {"device": args.device} if args.device else {}
    sim = hybridtree.Simulation(*plummer(args.n, seed=1), dt=1 / 512, eps=0.01,
                                theta=args.theta, multipole="monopole", quiet=True, **opts)
    rt, engine = sim._rt, sim._stepper.engine
    own = engine.tuning
    for r in range(args.rounds):
        for gib in args.gib:
            engine.tuning = replace(own, list_batch_bytes=int(gib * 2**30) if gib > 0
                                    else 1 << 62)
            transfer.release(rt)
            sim.step(1)
            rt.memory.reset_peak()
            base = rt.memory.live["lists"]
            t0 = time.perf_counter()
            sim.step(args.steps)
            step_s = (time.perf_counter() - t0) / args.steps
            row = {"n": args.n, "round": r, "gib": gib, "step_s": round(step_s, 5),
                   "lists_mib": round(rt.memory.owner_peak["lists"] / 2**20, 1),
                   "lists_before_mib": round(base / 2**20, 1),
                   "room": list_walk.list_room(rt).room or own.list_start,
                   "peak_mib": round(rt.memory.peak / 2**20, 1)}
            print(json.dumps(row), flush=True)


if __name__ == "__main__":
    main()
