"""Block steps against shared steps in a periodic box (a benchmark, not a test):

    python scripts/bench/box_blocks.py --n-grid 16 --steps 8 --z-end 2

A 2LPT box of n_grid³ particles in 100 Mpc/h (configs/cosmo_box_small.toml's cosmology,
ε = 1/30 of the spacing) from z = 49 to --z-end in --steps steps uniform in ln a, run with
block steps for the short range (each --eta) and with the time split's shared short
steps (each --shared n: n tree steps per step); every run by the caller's clock around
``Simulation.step``, its short-range forces, and its particles' distance (in ε, nearest
image) from a reference run of shared steps (--reference n).  Prints one JSON line per
run.  The device: HYBRIDTREE_DEVICE, as for every run.
"""

from __future__ import annotations

import argparse
import json
import time
from pathlib import Path

import numpy as np

import hybridtree

ROOT = Path(__file__).resolve().parents[2]
BOX = 142.85714285714286          # 100 Mpc/h, h = 0.7


def run(args, over: dict) -> dict:
    base = {"ics.n_grid": args.n_grid, "ics.box": BOX, "gravity.eps": BOX / args.n_grid / 30,
            "cosmology.steps": args.steps, "cosmology.z_end": args.z_end,
            "output.redshifts": "", "output.dir": args.tmp}
    with hybridtree.Simulation.from_config(ROOT / "configs" / "cosmo_box_small.toml",
                                           {**base, **over}, quiet=True) as sim:
        sim.step(1)                          # compiles the kernels; not timed
        t0 = time.perf_counter()
        sim.step(args.steps - 1)
        seconds = time.perf_counter() - t0
        p = sim.particles()
        rows = sim.timebins()
        counts = dict(sim._stepper.counts)
    return {"pos": p.pos[np.argsort(p.ids)], "seconds": seconds, "rows": rows,
            "short_forces": counts.get("short_forces", 0)}


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--n-grid", type=int, default=16)
    ap.add_argument("--steps", type=int, default=8)
    ap.add_argument("--z-end", type=float, default=2.0)
    ap.add_argument("--eta", type=float, nargs="+", default=[0.2, 0.1])
    ap.add_argument("--max-bin", type=int, default=8)
    ap.add_argument("--shared", type=int, nargs="+", default=[4, 8, 16])
    ap.add_argument("--reference", type=int, default=32)
    ap.add_argument("--tmp", default="/tmp/box_blocks")
    args = ap.parse_args()
    eps = BOX / args.n_grid / 30
    ref = run(args, {"cosmology.short_steps": args.reference})
    cases = [("block", eta, {"time.stepping": "block", "time.eta": eta,
                             "time.max_bin": args.max_bin}) for eta in args.eta]
    cases += [("shared", n, {"cosmology.short_steps": n}) for n in args.shared]
    for kind, knob, over in cases:
        r = run(args, over)
        d = np.mod(r["pos"] - ref["pos"] + BOX / 2, BOX) - BOX / 2
        d = np.linalg.norm(d, axis=1) / eps
        forces = (sum(row["forces"] for row in r["rows"]) if kind == "block"
                  else r["short_forces"] * args.n_grid ** 3)
        print(json.dumps({"scheme": kind, "eta" if kind == "block" else "short_steps": knob,
                          "n": args.n_grid ** 3, "steps": args.steps, "z_end": args.z_end,
                          "seconds": round(r["seconds"], 3), "forces": int(forces),
                          "bins": {row["bin"]: row["particles"] for row in r["rows"]
                                   if row["particles"]},
                          "median_eps": float(np.median(d)), "p99_eps": float(np.percentile(d, 99)),
                          "max_eps": float(d.max()), "reference_short_steps": args.reference}),
              flush=True)


if __name__ == "__main__":
    main()
