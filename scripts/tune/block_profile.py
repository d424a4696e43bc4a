"""Where a block run's time goes against shared steps of its deepest bin (a tuning aid,
not a test): the Hernquist cusp with a satellite of scripts/bench/timesteps.py, each
kernel's device time summed by name over the whole run (profiling events), the list
walk's kernels also per launch size (work-groups), and the blocking reads.

    PYTHONPATH=. python scripts/tune/block_profile.py --device nvidia --n 4194304
"""
from __future__ import annotations

import argparse
import collections
import os
import sys
import time

import numpy as np
import pyopencl as cl

from hybridtree import Simulation
from hybridtree.gravity import list_walk
from hybridtree.ics import hernquist_satellite

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import kernels as hooks  # noqa: E402  (the blocking-read recorder of scripts/tune/kernels.py)

_CALL, _EVENTS = cl.Kernel.__call__, []


def _recording(self, queue, global_size, *args, **kwargs):
    ev = _CALL(self, queue, global_size, *args, **kwargs)
    _EVENTS.append((self.function_name, int(np.prod(global_size)),
                    int(np.prod(args[0])) if args and args[0] is not None else 0, ev))
    return ev


def profiled(settings: dict, pos, vel, mass, t_end: float) -> dict:
    sim = Simulation(pos, vel, mass, quiet=True, settings=settings)
    _EVENTS.clear()
    hooks._COPIES.clear()
    undo = hooks._patch_host_calls()         # each blocking read's wait, in hooks._COPIES
    cl.Kernel.__call__ = _recording
    rooms = list_walk.list_room(sim._rt)
    before = {"walks": rooms.walks, "again": rooms.again}
    try:
        t0 = time.perf_counter()
        sim.evolve(t_end)
        wall = time.perf_counter() - t0
    finally:
        cl.Kernel.__call__ = _CALL
        for obj, attr, old in undo:
            setattr(obj, attr, old)
    waits = [dt for _where, _ev, dt in hooks._COPIES]
    per = collections.defaultdict(lambda: [0, 0.0])
    walks = collections.defaultdict(lambda: [0, 0.0])
    for name, size, local, ev in _EVENTS:
        ev.wait()
        t = (ev.profile.end - ev.profile.start) * 1e-9
        per[name][0] += 1
        per[name][1] += t
        if name in ("eval_lists", "walk_lists") and local:
            groups = size // local
            key = (name, "all" if groups > 20000 else "<=20000 groups")
            walks[key][0] += groups
            walks[key][1] += t
    return {"wall": wall, "per": per, "walks": walks, "waits": (len(waits), sum(waits)),
            "counts": dict(sim._stepper.counts), "steps": sim.steps,
            "list_walks": {k: getattr(rooms, k) - v for k, v in before.items()},
            "bins": sim.timebins() if settings.get("time.stepping") == "block" else []}


def main() -> None:
    p = argparse.ArgumentParser()
    p.add_argument("--device", default=None)
    p.add_argument("--n", type=int, default=1 << 22)
    p.add_argument("--dt", type=float, default=0.5)
    p.add_argument("--t-end", type=float, default=1.0)
    p.add_argument("--eta", type=float, default=0.2)
    p.add_argument("--k", type=int, default=5, help="shared steps of dt / 2^k")
    args = p.parse_args()
    common = {"gravity.eps": 0.01, "output.diag_every": 10 ** 9,
              **({"gravity.device": args.device} if args.device else {}),
              "gravity.multipole": "monopole"}
    wp, wv, wm = hernquist_satellite(2000, seed=2)
    for stepping in ("shared", "block"):          # kernels built before anything is timed
        Simulation(wp, wv, wm, quiet=True, settings={**common, "time.dt": 0.25,
                                                      "time.stepping": stepping}).evolve(0.5)
    pos, vel, mass = hernquist_satellite(args.n, seed=1)
    runs = {"block": profiled({**common, "time.stepping": "block", "time.dt": args.dt,
                               "time.eta": args.eta}, pos, vel, mass, args.t_end),
            "shared": profiled({**common, "time.dt": args.dt / 2 ** args.k}, pos, vel, mass,
                               args.t_end)}
    for what, r in runs.items():
        busy = sum(v[1] for v in r["per"].values())
        print(f"{what}: wall {r['wall']:.3f} s, kernels {busy:.3f} s, {r['steps']} steps, "
              f"blocking reads {r['waits'][0]} ({r['waits'][1]:.3f} s), counts {r['counts']}, "
              f"list walks {r['list_walks']}")
        for b in r["bins"]:
            print(f"    bin {b['bin']}: {b['particles']} particles, {b['substeps']} substeps "
                  f"as the lowest active, {1e3 * b['seconds'] / max(b['substeps'], 1):.2f} ms each")
        for name, (c, t) in sorted(r["per"].items(), key=lambda kv: -kv[1][1])[:18]:
            print(f"    {name:24s} {c:6d}x {t:8.4f} s")
        for (name, kind), (g, t) in sorted(r["walks"].items()):
            print(f"    {name} launches of {kind}: {g} groups, {t:.4f} s, "
                  f"{1e9 * t / max(g, 1):.1f} ns per group")


if __name__ == "__main__":
    main()
