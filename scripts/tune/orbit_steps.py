#!/usr/bin/env python
"""How close the block criterion's steps come to the leapfrog's stability limit (a tuning
aid, not a test; issue 57).

    PYTHONPATH=. python scripts/tune/orbit_steps.py --device cpu --n 262144

M31 (configs/galaxy_m31.toml's eps and largest step dt): the forces of the model at t = 0
(one ``Simulation``), each particle's step from dt = eta sqrt(eps / |a|) put into its
power-of-two bin of dt / 2^k (bins 0 .. 12, as the block scheme does), against a local
orbital frequency: omega^2 = G M(<r) / (r^2 + eps^2)^(3/2) about the bulge's centre (the
median of its particles), M(<r) the mass of all particles within r.  The leapfrog is
unstable for omega h > 2.  Printed per eta (and per shared step dt / 2^k): the share of
particles with omega h above 1 and 2, and the largest omega h.
"""

from __future__ import annotations

import argparse
from pathlib import Path

import numpy as np

from hybridtree import Simulation
from hybridtree.config import load_config
from hybridtree.ics.galaxy import galaxy, m31

ROOT = Path(__file__).resolve().parents[2]


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--device", default=None)
    p.add_argument("--n", type=int, default=1 << 18)
    p.add_argument("--seed", type=int, default=2)
    p.add_argument("--eta", type=float, nargs="+", default=[0.8, 0.4, 0.2])
    p.add_argument("--shared", type=int, nargs="+", default=[2, 3, 4])
    args = p.parse_args()
    cfg = load_config(ROOT / "configs" / "galaxy_m31.toml")
    eps, dt, deep = cfg.gravity.eps, cfg.time.dt, cfg.time.max_bin
    pos, vel, mass, ids, types = galaxy(m31(args.n), seed=args.seed)
    settings = {"gravity.eps": eps, "time.dt": dt}
    if args.device:
        settings["gravity.device"] = args.device
    sim = Simulation(pos, vel, mass, ids, types=types, quiet=True, settings=settings)
    a = np.linalg.norm(sim.particles().acc, axis=1)
    sim.close()
    centre = np.median(pos[types == 3], axis=0)
    r = np.linalg.norm(pos - centre, axis=1)
    order = np.argsort(r)
    omega = np.empty(len(r))
    omega[order] = np.sqrt(np.cumsum(mass[order]) / (r[order] ** 2 + eps ** 2) ** 1.5)
    print(f"# M31, N = {args.n}, eps {eps}, dt {dt}; {np.mean(r < eps):.1e} of the particles "
          f"within eps of the centre")

    def show(label: str, step: np.ndarray | float) -> None:
        x = omega * step
        print(f"{label:14s} omega h > 1: {np.mean(x > 1):.2e}  > 2: {np.mean(x > 2):.2e}  "
              f"largest {x.max():.2f}")

    for eta in args.eta:
        k = np.clip(np.ceil(np.log2(dt / (eta * np.sqrt(eps / a)))), 0, deep)
        show(f"block eta {eta:g}", dt / 2 ** k)
    for k in args.shared:
        show(f"shared dt/{2 ** k}", dt / 2 ** k)


if __name__ == "__main__":
    main()
