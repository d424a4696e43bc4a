"""Where the fixed cost of a timed run goes (issue 57's fronts: on the H200 a 2^22 cusp
run of 32 forces per particle took 5.3 s of which the steps are about 0.6 s).  Times by
the caller's clock ``Simulation(...)``, its first ``evolve`` of one largest step and
``steps`` more, each waited for, then profiles the same once (cProfile, the 25 largest
cumulative entries).  A tuning aid, not a test.

    PYTHONPATH=. python scripts/tune/setup_cost.py --device nvidia --n 4194304
"""

from __future__ import annotations

import argparse
import cProfile
import pstats
import time

import numpy as np

from hybridtree import Simulation
from hybridtree.ics import hernquist_satellite


def run(pos, vel, mass, ids, args, label: str) -> None:
    settings = {"gravity.eps": 0.005, "time.dt": args.dt, "output.diag_every": 1,
                **({"gravity.device": args.device} if args.device else {})}
    t0 = time.perf_counter()
    sim = Simulation(pos, vel, mass, ids, quiet=True, settings=settings)
    t1 = time.perf_counter()
    sim.evolve(args.dt)
    t2 = time.perf_counter()
    sim.evolve(args.dt * (1 + args.steps))
    t3 = time.perf_counter()
    sim.close()
    t4 = time.perf_counter()
    print(f"{label}: Simulation() {t1 - t0:.3f} s, first step {t2 - t1:.3f} s, "
          f"{args.steps} steps {t3 - t2:.3f} s, close {t4 - t3:.3f} s", flush=True)


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--device", default=None)
    p.add_argument("--n", type=int, default=1 << 22)
    p.add_argument("--dt", type=float, default=1 / 64)
    p.add_argument("--steps", type=int, default=8)
    args = p.parse_args()
    pos, vel, mass = hernquist_satellite(args.n, seed=1)
    ids = np.arange(1, args.n + 1, dtype=np.uint64)
    small = min(args.n, 4096)
    run(pos[:small], vel[:small], mass[:small], ids[:small], args, "warm-up")
    run(pos, vel, mass, ids, args, "timed")
    prof = cProfile.Profile()
    prof.enable()
    run(pos, vel, mass, ids, args, "profiled")
    prof.disable()
    pstats.Stats(prof).sort_stats("cumulative").print_stats(25)


if __name__ == "__main__":
    main()
