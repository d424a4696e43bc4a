#!/usr/bin/env python
"""Issue 19's benchmark (not a test): what a Python user waits for with
``hybridtree.Simulation`` -- construction (device, kernels, first forces), a step by the
caller's clock around ``sim.step(n)``, reading the particles back (``sim.pos``), and
``sim.save`` -- beside the same run's own per-step wall (``diagnostics["step_s"]``).

    PYTHONPATH=. python scripts/bench_api.py --device nvidia --n 4194304 --steps 16
    PYTHONPATH=. python scripts/bench_api.py --quick --device cpu      # ~10 s on 2 cores

One Plummer sphere (seed 1, Hénon units); eps 0.01, theta 0.5, dt 1/512, monopole; one
warm-up step; then ``--steps`` steps in one call, timed by ``time.perf_counter``; the run
reports diagnostics only at the end of each call, so ``step_s_diagnostics`` is the run's
own wall per step over the same steps.  One JSON object on stdout per N.
"""

from __future__ import annotations

import argparse
import json
import tempfile
import time
from pathlib import Path

import numpy as np

import hybridtree
from hybridtree.ics import plummer


def measure(n: int, steps: int, device: str | None, multipole: str) -> dict:
    pos, vel, mass = plummer(n, seed=1)
    t0 = time.perf_counter()
    sim = hybridtree.Simulation(pos, vel, mass, dt=1 / 512, eps=0.01, theta=0.5,
                                multipole=multipole, device=device or "", quiet=True,
                                diag_every=1 << 30)
    t_make = time.perf_counter() - t0
    sim.step(1)                           # warm-up: lazily built kernels, buffer growth
    t0 = time.perf_counter()
    sim.step(steps)
    t_steps = time.perf_counter() - t0
    t0 = time.perf_counter()
    x = sim.pos
    t_pos = time.perf_counter() - t0
    with tempfile.TemporaryDirectory() as tmp:
        t0 = time.perf_counter()
        sim.save(Path(tmp) / "state.hdf5")
        t_save = time.perf_counter() - t0
    d = sim.diagnostics
    return {"n": n, "steps": steps, "device": repr(sim).split(" on ", 1)[1].rstrip(">"),
            "multipole": multipole, "make_s": round(t_make, 4),
            "step_s_caller": round(t_steps / steps, 5),
            "step_s_diagnostics": round(float(d["step_s"][-1]), 5),
            "pos_s": round(t_pos, 4), "save_s": round(t_save, 4),
            "energy_error": float(sim.energy_error), "finite": bool(np.isfinite(x).all())}


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--n", type=int, nargs="+", default=[1 << 20])
    ap.add_argument("--steps", type=int, default=16)
    ap.add_argument("--device", default=None)
    ap.add_argument("--multipole", default="monopole", choices=("monopole", "quadrupole"))
    ap.add_argument("--quick", action="store_true", help="N = 20000, 4 steps")
    args = ap.parse_args()
    if args.quick:
        args.n, args.steps = [20000], 4
    for n in args.n:
        print(json.dumps(measure(n, args.steps, args.device, args.multipole)), flush=True)


if __name__ == "__main__":
    main()
