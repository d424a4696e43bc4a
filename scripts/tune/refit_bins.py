"""Interactions per force of each bin of a short block run of M31 (a tuning aid, not a
test; issue 57): how much a refitted substep's walk costs against a built one's.

    PYTHONPATH=. python scripts/tune/refit_bins.py --device cpu --n 65536 --steps 2 \
        --set time.eta=0.8 --set gravity.refit_fraction=0.05

Runs configs/galaxy_m31.toml's model with block steps (``time.rebin = step``) for
``--steps`` largest steps and prints, per bin charged a substep, the substeps, the
forces, the interactions per force, seconds per substep, and the refits counted.
"""
from __future__ import annotations

import argparse
import json
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "bench"))

import numpy as np  # noqa: E402
from common import add_device  # noqa: E402
from pareto import particles, system_settings  # noqa: E402

from hybridtree import Simulation  # noqa: E402
from hybridtree.config import parse_overrides  # noqa: E402


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    add_device(p)
    p.add_argument("--n", type=int, default=1 << 16)
    p.add_argument("--seed", type=int, default=2)
    p.add_argument("--steps", type=int, default=2)
    p.add_argument("--set", action="append", default=[])
    p.add_argument("--json")
    p.add_argument("--ics", help="an .npz of the model: read where it exists, else written "
                                 "(runs of old and new code start from the same arrays)")
    args = p.parse_args()
    args.system, args.eps, args.dt, args.t_end, args.max_bin, args.long = \
        "m31", None, None, None, None, False
    # pareto.py's M31: the config's softening, largest step and deepest bin; --set last
    settings = {"time.stepping": "block", "time.rebin": "step", "output.diag_every": 10 ** 9,
                **system_settings(args)}
    settings.update({"time.dt": args.dt, "time.max_bin": args.max_bin,
                     **parse_overrides(args.set)})
    if args.ics and Path(args.ics).exists():
        with np.load(args.ics) as f:
            pos, vel, mass, ids, types = (f[k] for k in ("pos", "vel", "mass", "ids", "types"))
    else:
        pos, vel, mass, ids, types = particles(args)
        if args.ics:
            np.savez(args.ics, pos=pos, vel=vel, mass=mass, ids=ids, types=types)
    sim = Simulation(pos, vel, mass, ids, types=types, quiet=True, settings=settings)
    t0 = time.perf_counter()
    sim.evolve(args.steps * settings["time.dt"])
    wall = time.perf_counter() - t0
    counts = dict(sim._stepper.counts)
    rows = sim.timebins()
    sim.close()
    print(f"N = {args.n}, {args.steps} largest steps, evolve {wall:.3f} s, "
          f"refits {counts.get('refits', 0)}, sets {args.set}")
    for b in rows:
        per = b["interactions"] / max(b["forces"], 1)
        print(f"  bin {b['bin']}: {b['particles']:8d} particles, {b['substeps']:5d} substeps, "
              f"{per:8.0f} interactions a force, "
              f"{1e3 * b['seconds'] / max(b['substeps'], 1):7.2f} ms a substep")
    if args.json:
        with open(args.json, "a") as f:
            f.write(json.dumps({"n": args.n, "steps": args.steps, "sets": args.set,
                                "wall_s": wall, "counts": counts, "bins": rows}) + "\n")


if __name__ == "__main__":
    main()
