#!/usr/bin/env python
"""Where a short run's wall time goes beside its steps (a tuning aid, not a test; issue 57).

    PYTHONPATH=. python scripts/tune/run_costs.py m31 --device nvidia --n 4194304 \
        --how block:0.8 shared:3 --json costs.json

For each run of ``--how`` (``block:ETA`` or ``shared:K``, pareto.py's systems and spans):
the caller's clock around ``Simulation(...)``, ``evolve`` and ``close``; the same run with
diagnostics after every largest step (as pareto.py samples the energy) and with none
until the end; and a cProfile of the sampled run's whole (cumulative, top ``--top``),
so that the fixed costs (set-up, first forces, diagnostics) show beside the steps.
"""

from __future__ import annotations

import argparse
import cProfile
import io
import pstats
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "bench"))

from common import JsonLines, add_device, run_header  # noqa: E402
from pareto import particles, system_settings, warm_up, SYSTEMS  # noqa: E402

from hybridtree import Simulation  # noqa: E402


def timed_run(args, ics, common: dict, how: dict, diag_every: int, prof: bool) -> dict:
    pos, vel, mass, ids, types = ics
    settings = {**common, "output.diag_every": diag_every, **how}
    pr = cProfile.Profile() if prof else None
    if pr:
        pr.enable()
    t0 = time.perf_counter()
    sim = Simulation(pos, vel, mass, ids, types=types, quiet=True, settings=settings)
    t1 = time.perf_counter()
    sim.evolve(args.t_end)
    t2 = time.perf_counter()
    err = float(sim.energy_error)
    steps = sim.steps
    sim.close()
    t3 = time.perf_counter()
    row = {"init_s": t1 - t0, "evolve_s": t2 - t1, "close_s": t3 - t2, "wall_s": t3 - t0,
           "steps": steps, "energy_error": err, "diag_every": diag_every}
    if pr:
        pr.disable()
        s = io.StringIO()
        pstats.Stats(pr, stream=s).sort_stats("cumulative").print_stats(args.top)
        row["profile"] = s.getvalue()
    return row


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("system", choices=tuple(SYSTEMS))
    add_device(p)
    p.add_argument("--n", type=int, default=1 << 22)
    p.add_argument("--seed", type=int, default=2)
    p.add_argument("--how", nargs="+", default=["block:0.8", "shared:3"])
    p.add_argument("--top", type=int, default=45)
    p.add_argument("--json")
    p.add_argument("--set", action="append", default=[])
    args = p.parse_args()
    args.eps = args.dt = args.t_end = args.max_bin = None
    args.long = False
    common = system_settings(args)
    ics = particles(args)
    print(run_header(args.device or "default"), flush=True)
    warm_up(args, common)
    out = JsonLines(args.json)
    for spec in args.how:
        kind, value = spec.split(":")
        if kind == "block":
            how = {"time.stepping": "block", "time.eta": float(value),
                   "time.max_bin": args.max_bin, "time.dt": args.dt}
            every = 1
        else:
            how = {"time.dt": args.dt / 2 ** int(value)}
            every = 2 ** int(value)
        for diag, prof in ((every, False), (10 ** 9, False), (every, True)):
            row = {"system": args.system, "n": args.n, "how": spec,
                   **timed_run(args, ics, common, how, diag, prof)}
            text = row.pop("profile", None)
            print(f"{spec} diag_every {diag}: init {row['init_s']:.3f} evolve "
                  f"{row['evolve_s']:.3f} close {row['close_s']:.3f} wall {row['wall_s']:.3f} s "
                  f"({row['steps']} steps, dE/E {row['energy_error']:.2e})", flush=True)
            if text:
                print(text, flush=True)
            out.emit(row)


if __name__ == "__main__":
    main()
