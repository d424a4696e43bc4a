#!/usr/bin/env python
"""Shared steps on refitted trees: an experiment for issue 30, not an option of the code
(a tuning aid, not a test).  The one-process device backend's build
(:meth:`hybridtree.gravity.backends.DeviceBackend.build`) is patched so that a force of all
particles refits the last tree (:func:`hybridtree.gravity.tree.refit.refit_device_tree`: cells
kept, moments and sides redone) except every ``K``-th, which builds; for each K it
times ``--steps`` steps of ``hybridtree.Simulation`` (Plummer, the defaults, a report
every ``--diag-every``) by the caller's clock and gives the energy error and the last
force's error against float64 direct sums on ``--sinks`` particles.

What stops it from being an option: a restart would build where the run refitted, so
it would not continue bit for bit (docs/history.md §21).

    PYTHONPATH=. python scripts/tune/refit_shared.py --device nvidia --n 4194304 --k 1 2 4 8
    PYTHONPATH=. python scripts/tune/refit_shared.py --n 2048 --k 1 2 --steps 4 --sinks 50
"""

from __future__ import annotations

import argparse
import json
import time

import numpy as np

import hybridtree
from hybridtree.gravity import direct_reference
from hybridtree.gravity.backends import DeviceBackend
from hybridtree.gravity.tree.device_build import DeviceArrays
from hybridtree.ics import plummer

_BUILD_EVERY = [1]
_ORIGINAL = DeviceBackend.build


def _build(self, s, active, criterion):
    """DeviceBackend.build with forces of all particles refitting but every K-th (the
    tree built with the criterion's angle, as the backend's own)."""
    k, e = _BUILD_EVERY[0], self.engine
    if active is None and k > 1:
        e._full = getattr(e, "_full", 0) + 1
        kept = e.kept
        if (kept.tree is not None and kept.owner is s and kept.tree.n == s.n
                and kept.tree.theta == float(criterion.build_theta) and (e._full - 1) % k):
            arrays = DeviceArrays(s.pos, s.mass, s.n, e.softenings.device(s, e.g, e.work))
            e.tally.add("refits", 1)
            with e.clock.device("build", "refit"):
                return kept.refit(arrays)
    return _ORIGINAL(self, s, active, criterion)


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--device", default="")
    p.add_argument("--n", type=int, nargs="+", default=[1 << 16])
    p.add_argument("--k", type=int, nargs="+", default=[1, 2, 4, 8])
    p.add_argument("--steps", type=int, default=32)
    p.add_argument("--diag-every", type=int, default=8)
    p.add_argument("--sinks", type=int, default=300)
    p.add_argument("--json", default=None)
    args = p.parse_args()
    DeviceBackend.build = _build
    rows = []
    for n in args.n:
        pos, vel, mass = plummer(n, seed=1)
        for k in args.k:
            _BUILD_EVERY[0] = k
            sim = hybridtree.Simulation(pos, vel, mass, dt=1 / 512, eps=0.01,
                                        device=args.device, quiet=True,
                                        diag_every=args.diag_every)
            sim.step(2)                             # kernels built, buffers grown
            _ = sim.pos
            t0 = time.perf_counter()
            sim.step(args.steps)
            x = sim.pos                             # waits for the device
            wall = (time.perf_counter() - t0) / args.steps
            idx = np.random.default_rng(3).choice(n, args.sinks, replace=False)
            ref, _ = direct_reference(x, mass, 0.01, sinks=x[idx])
            acc = sim.acc[idx]
            err = np.linalg.norm(acc - ref, axis=1) / np.linalg.norm(ref, axis=1)
            row = {"n": n, "build_every": k, "step_s": wall, "energy_error": sim.energy_error,
                   "p99": float(np.percentile(err, 99)), "median": float(np.median(err)),
                   "steps": args.steps, "diag_every": args.diag_every}
            rows.append(row)
            print(json.dumps(row), flush=True)
    if args.json:
        with open(args.json, "w") as f:
            json.dump(rows, f, indent=1)


if __name__ == "__main__":
    main()
