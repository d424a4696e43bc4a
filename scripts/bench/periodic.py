"""Periodic forces by TreePM through the public call, by the caller's clock.

For each N: a clustered periodic box (half the particles uniform, half in 64 Gaussian
clumps, as a late-time box has them), ``hybridtree.gravity.accelerations(pos, mass, eps,
box=L)`` timed around the call (best of --repeat after one warm-up), the mesh's share
(timings["pm"]), interactions per particle, and the error on --sample sinks against the
same call with a reference setting (theta = 0.2, r_cut = 7 r_s, TSC interlaced mesh).

    python scripts/bench/periodic.py --device nvidia --n 262144 2097152 --rcut 4.5 7.0
"""

from __future__ import annotations

import argparse
import json
import time

import numpy as np

import hybridtree.gravity as gravity


def box_particles(n: int, seed: int = 1) -> tuple[np.ndarray, np.ndarray]:
    rng = np.random.default_rng(seed)
    half = n // 2
    centres = rng.random((64, 3))
    clumps = centres[rng.integers(0, 64, n - half)] + rng.normal(0.0, 0.01, (n - half, 3))
    pos = np.concatenate([rng.random((half, 3)), clumps]) % 1.0
    return pos, np.full(n, 1.0 / n)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--device", default=None)
    ap.add_argument("--n", type=int, nargs="+", default=[1 << 18])
    ap.add_argument("--rcut", type=float, nargs="+", default=[7.0])
    ap.add_argument("--theta", type=float, nargs="+", default=[0.5])
    ap.add_argument("--repeat", type=int, default=3)
    ap.add_argument("--sample", type=int, default=2000)
    args = ap.parse_args()
    for n in args.n:
        pos, mass = box_particles(n)
        eps = 1.0 / 40.0 / n ** (1.0 / 3.0)         # 1/40 of the mean spacing
        ref = gravity.accelerations(pos, mass, eps, theta=0.2, box=1.0, rcut=7.0, device=args.device)
        idx = np.random.default_rng(2).choice(n, min(args.sample, n), replace=False)
        for rcut in args.rcut:
            for theta in args.theta:
                kw = dict(box=1.0, rcut=rcut, device=args.device)
                gravity.accelerations(pos, mass, eps, theta=theta, **kw)
                best, f = np.inf, None
                for _ in range(args.repeat):
                    t0 = time.perf_counter()
                    f = gravity.accelerations(pos, mass, eps, theta=theta, **kw)
                    best = min(best, time.perf_counter() - t0)
                err = (np.linalg.norm(f.acc[idx] - ref.acc[idx], axis=1)
                       / np.linalg.norm(ref.acc[idx], axis=1))
                print(json.dumps({"n": n, "rcut": rcut, "theta": theta, "seconds": best,
                                  "pm": f.timings.get("pm"), "device": f.device,
                                  "per_particle": f.interactions / n,
                                  "median_vs_ref": float(np.median(err)),
                                  "p99_vs_ref": float(np.percentile(err, 99))}), flush=True)


if __name__ == "__main__":
    main()
