"""What a softening per particle costs the public force call (issue 32 item 2: the walks'
PER_EPS), by the caller's clock, and its accuracy:

    python scripts/bench/eps_types.py --device nvidia --n 4194304 16777216 [--json FILE]

Particles: a Hernquist-like two-component set (a Plummer sphere of which one third is
shrunk by 0.15 into a compact 'disk'), masses equal; softenings: one for all (the
component's large one, ``--large``), or the disk's small one (``--small``) and the large
one per particle (the mixed case).  Each case: one untimed call (kernel builds), then
``--repeat`` timed calls of ``hybridtree.gravity.accelerations`` (geometric theta 0.5,
the device's default multipole; the best and the median reported), and the relative
error of |a| on ``--sample`` sinks against a float64 sum written here (a pair's
softening the larger of the two, as the code's rule; the sinks themselves skipped).
"""

from __future__ import annotations

import argparse
import json
import sys
import time

import numpy as np


def particles(n: int, seed: int = 1):
    from hybridtree.ics import plummer
    pos, _, mass = plummer(n, seed=seed)
    disk = np.zeros(n, bool)
    disk[: n // 3] = True
    pos[disk] *= 0.15
    return pos, mass, disk


def reference(pos, mass, eps, rows, chunk: int = 1 << 21) -> np.ndarray:
    """float64 accelerations of the sinks ``rows`` (the pair's softening: the larger)."""
    out = np.zeros((len(rows), 3))
    for k, i in enumerate(rows):
        for j0 in range(0, len(pos), chunk):
            d = pos[j0:j0 + chunk] - pos[i]
            e2 = np.maximum(eps[i], eps[j0:j0 + chunk]) ** 2
            r2 = np.einsum("ij,ij->i", d, d) + e2
            w = mass[j0:j0 + chunk] / (r2 * np.sqrt(r2))
            if j0 <= i < j0 + chunk:
                w[i - j0] = 0.0
            out[k] = out[k] + w @ d
    return out


def main(argv: list[str]) -> list[dict]:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--n", type=int, nargs="+", default=[1 << 18])
    ap.add_argument("--device", default=None)
    ap.add_argument("--small", type=float, default=0.002)
    ap.add_argument("--large", type=float, default=0.02)
    ap.add_argument("--repeat", type=int, default=5)
    ap.add_argument("--sample", type=int, default=100)
    ap.add_argument("--json", default="")
    args = ap.parse_args(argv)
    import hybridtree.gravity as gravity
    rows = []
    for n in args.n:
        pos, mass, disk = particles(n)
        mixed = np.where(disk, args.small, args.large)
        sample = np.random.default_rng(2).choice(n, args.sample, replace=False)
        refs = {}
        for case, eps in (("one eps", args.large), ("eps per particle", mixed)):
            gravity.accelerations(pos, mass, eps, device=args.device)      # builds
            times, f = [], None
            for _ in range(args.repeat):
                t0 = time.perf_counter()
                f = gravity.accelerations(pos, mass, eps, device=args.device)
                times.append(time.perf_counter() - t0)
            e_arr = np.broadcast_to(np.asarray(eps, np.float64), (n,))
            key = case
            refs[key] = reference(pos, mass, e_arr, sample)
            err = (np.linalg.norm(f.acc[sample] - refs[key], axis=1)
                   / np.linalg.norm(refs[key], axis=1))
            row = {"n": n, "case": case, "best_s": min(times),
                   "median_s": float(np.median(times)),
                   "interactions_per_particle": f.interactions / n,
                   "err_median": float(np.median(err)), "err_p99": float(np.percentile(err, 99)),
                   "err_max": float(err.max()), "device": f.device}
            rows.append(row)
            print(json.dumps(row), flush=True)
    if args.json:
        with open(args.json, "w") as fh:
            json.dump(rows, fh, indent=1)
    return rows


if __name__ == "__main__":
    main(sys.argv[1:])
