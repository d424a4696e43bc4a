#!/usr/bin/env python
"""Device memory of one tree force evaluation against N (a benchmark, not a test):
the largest N that fits and the bytes per particle.

    PYTHONPATH=. python scripts/bench/memory.py --device nvidia \\
        --n 67108864 134217728 201326592 268435456

Each N runs in its own process (a failed allocation can leave an OpenCL context
unusable), while this one samples ``nvidia-smi``'s used memory every 50 ms; the row
gives the peak over the process's baseline (CUDA context included), per particle.
The particles are Plummer positions only (the radius by the inverse of the enclosed
mass, isotropic directions; no velocities, which at 2^28 would cost minutes), unit
total mass, eps = 0.01, theta = 0.5 monopole, the device's default groups.  Without
``nvidia-smi`` (a CPU device) the peak column is left empty.
"""

from __future__ import annotations

import argparse
import json
import subprocess
import sys
import time

import numpy as np

from common import Sampler, add_device, plummer_positions, write_json


def one(n: int, device: str | None, repeat: int) -> dict:
    """Force on n particles; the timings of the last of ``repeat`` calls."""
    from hybridtree.gravity import accelerations
    pos = plummer_positions(n, seed=1)
    mass = np.full(n, 1.0 / n)
    row: dict = {"n": n}
    for _ in range(repeat):
        t0 = time.perf_counter()
        f = accelerations(pos, mass, 0.01, method="tree", theta=0.5, device=device)
        row["total_s"] = time.perf_counter() - t0
    row["timings"] = {k: v for k, v in f.timings.items() if isinstance(v, (int, float))}
    row["interactions_per_sink"] = f.interactions / n
    row["finite"] = bool(np.isfinite(f.acc).all())
    return row


def main(argv: list[str] | None = None) -> None:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    add_device(p)
    p.add_argument("--n", type=int, nargs="+", default=[1 << 16])
    p.add_argument("--repeat", type=int, default=1, help="calls per N (the last is timed)")
    p.add_argument("--timeout", type=float, default=300, help="seconds per N")
    p.add_argument("--one", type=int, help=argparse.SUPPRESS)
    p.add_argument("--json", metavar="PATH")
    args = p.parse_args(argv)
    if args.one:
        print(json.dumps(one(args.one, args.device, args.repeat)), flush=True)
        return
    base = Sampler.used()
    print(f"# device {args.device}  baseline {base} MiB used", flush=True)
    print("| N | fits | total s | walk s | peak MiB over baseline | bytes per particle |")
    print("|---|---|---|---|---|---|", flush=True)
    rows = []
    for n in args.n:
        cmd = [sys.executable, __file__, "--one", str(n), "--repeat", str(args.repeat)]
        if args.device:
            cmd += ["--device", args.device]
        with Sampler() as s:
            try:
                run = subprocess.run(cmd, capture_output=True, text=True, timeout=args.timeout)
                out, rc = run.stdout, run.returncode
                err = run.stderr.strip().splitlines()[-1:] if rc else []
            except subprocess.TimeoutExpired:
                out, rc, err = "", -1, [f"over {args.timeout} s"]
        row = json.loads(out.splitlines()[-1]) if rc == 0 and out.strip() else {"n": n}
        row["fits"] = rc == 0 and row.get("finite", False)
        row["error"] = err[0] if err else ""
        if s.ok and base is not None:
            row["peak_mib"] = s.peak - base
            row["bytes_per_particle"] = row["peak_mib"] * 2**20 / n
        rows.append(row)
        walk = row.get("timings", {}).get("walk", float("nan"))
        peak = row.get("peak_mib")
        print(f"| {n} | {'yes' if row['fits'] else 'no: ' + row['error'][:80]} | "
              f"{row.get('total_s', float('nan')):.3f} | {walk:.3f} | "
              f"{'' if peak is None else peak} | "
              f"{'' if peak is None else format(row['bytes_per_particle'], '.0f')} |", flush=True)
    write_json(args.json, rows)


if __name__ == "__main__":
    main()
