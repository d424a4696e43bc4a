"""Direct-kernel tuning sweep (a benchmark, not a test): coordinates x rsqrt flavour x
sinks per work-item x work-group size.

    PYTHONPATH=. python scripts/tune/direct.py --device nvidia --n 1048576
"""

import argparse
import itertools
import numpy as np

from hybridtree.gravity.direct import direct_forces
from hybridtree.gravity import direct_reference
from hybridtree.ics import plummer
from hybridtree.device.choice import get_runtime


def main() -> None:
    p = argparse.ArgumentParser()
    p.add_argument("--device", default=None)
    p.add_argument("--n", type=int, default=1 << 20)
    p.add_argument("--wg", type=int, nargs="+", default=[128, 256, 512])
    p.add_argument("--ni", type=int, nargs="+", default=[1], help="sinks per work-item")
    p.add_argument("--split", type=int, nargs="+", default=[0, 1], help="hi + lo coordinates")
    p.add_argument("--rsqrt", nargs="+", default=["rsqrt(x)"])
    p.add_argument("--unroll", type=int, nargs="+", default=[0],
                   help="unroll factor of the full-tile loop (0: the compiler's choice)")
    args = p.parse_args()
    rt = get_runtime(args.device)
    pos, _, mass = plummer(args.n, seed=1)
    idx = np.random.default_rng(0).choice(args.n, 256, replace=False)
    ref, _ = direct_reference(pos, mass, 0.01, sinks=pos[idx])
    print(f"# {rt.info.label}  N = {args.n}")
    for split, rs, ni, wg, un in itertools.product(args.split, args.rsqrt, args.ni, args.wg,
                                                   args.unroll):
        opts = {"RSQRT(x)": rs, "NI": ni} | ({"UNROLL": un} if un else {})
        direct_forces(rt, pos[:4096], mass[:4096], pos[:4096], 0.01, True, wg, split, opts)
        best = np.inf
        for _ in range(2):
            acc, _, tm = direct_forces(rt, pos, mass, pos, 0.01, True, wg, split, opts)
            best = min(best, tm["kernel"])
        e = np.linalg.norm(acc[idx] - ref, axis=1) / np.linalg.norm(ref, axis=1)
        rate = args.n * (args.n - 1) / best
        print(f"split={int(split)} {rs:16s} ni={ni} wg={wg:4d} unroll={un} kernel {best:.4f} s "
              f"{rate:.3e} pairs/s  max err {e.max():.2e}", flush=True)


if __name__ == "__main__":
    main()
