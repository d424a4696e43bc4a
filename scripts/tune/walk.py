"""Walk-kernel tuning sweep (a benchmark, not a test): kernel x group size x tile x sinks.

One device-built tree per N; every variant walks it (one warm-up, best of ``--repeat``).
Errors on ``--sample`` sinks against the device's hi/lo direct kernel (about 1e-6).

    PYTHONPATH=. python scripts/tune/walk.py --device nvidia --n 4194304 \\
        --kernels tree_walk walk_lists --n-group 32 64 128 256
"""

from __future__ import annotations

import argparse
import itertools

import numpy as np

from hybridtree.gravity import accelerations
from hybridtree.ics import plummer
from hybridtree.device.choice import get_runtime
from hybridtree.gravity.tree.device_build import build_device_tree
from hybridtree.gravity.tuning import WalkTuning
from hybridtree.gravity.walk import tree_forces


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--device", default=None)
    p.add_argument("--n", type=int, nargs="+", default=[1 << 20])
    p.add_argument("--kernels", nargs="+", default=["tree_walk", "walk_lists"])
    p.add_argument("--n-group", type=int, nargs="+", default=[64, 128])
    p.add_argument("--tile", type=int, nargs="+", default=[1],
                   help="walk_lists TILE / n_group")
    p.add_argument("--sinks", type=int, nargs="+", default=[1],
                   help="walk_lists sinks per work-item (SINKS)")
    p.add_argument("--pack", type=int, nargs="+", default=[1],
                   help="merge sibling leaves into fuller sink groups (WalkTuning.pack_groups)")
    p.add_argument("--define", nargs="*", default=[], metavar="KEY=VALUE",
                   help="extra kernel defines for every variant")
    p.add_argument("--variants", nargs="*", default=[""], metavar="KEY=V,KEY=V",
                   help="define sets to compare, one per variant (after --define)")
    p.add_argument("--theta", type=float, default=0.5)
    p.add_argument("--multipole", default="monopole")
    p.add_argument("--eps", type=float, default=0.01)
    p.add_argument("--sample", type=int, default=500)
    p.add_argument("--repeat", type=int, default=2)
    p.add_argument("--profile", action="store_true",
                   help="time walk_lists and eval_lists apart (waits between them)")
    args = p.parse_args()
    extra = dict(d.split("=", 1) for d in args.define)
    rt = get_runtime(args.device)
    print(f"# {rt.info.label}  theta={args.theta} {args.multipole} eps={args.eps}", flush=True)
    for n in args.n:
        pos, _, mass = plummer(n, seed=1)
        idx = np.random.default_rng(2).choice(n, min(n, args.sample), replace=False)
        ref = accelerations(pos, mass, args.eps, method="direct", sinks=pos[idx],
                            device=args.device).acc
        tree = build_device_tree(rt, pos, mass, args.theta, 16, args.multipole)
        for kernel in args.kernels:
            for g in args.n_group:
                lists = kernel == "walk_lists"
                for tile, sinks, pack, var in itertools.product(
                        args.tile if lists else [1], args.sinks if lists else [1], args.pack,
                        args.variants):
                    tune = WalkTuning(pack_groups=bool(pack), profile=args.profile)
                    opts = {"KERNEL": kernel, **extra,
                            **dict(d.split("=", 1) for d in var.split(",") if d)}
                    if lists:
                        opts |= {"TILE": tile * g, "SINKS": sinks}
                    try:
                        tree_forces(rt, tree, args.eps, g, options=opts, tuning=tune)
                        runs = [tree_forces(rt, tree, args.eps, g, options=opts, tuning=tune)
                                for _ in range(args.repeat)]
                    except Exception as exc:        # a variant the device cannot run
                        print(f"{n:9d} {kernel:11s} group={g:4d} tile={tile} sinks={sinks}: "
                              f"{exc!r:.120}")
                        continue
                    acc, _, n_pp, n_pc, t = min(runs, key=lambda r: r[4]["walk"])
                    inter = float(n_pp.sum() + n_pc.sum())
                    err = np.linalg.norm(acc[idx] - ref, axis=1) / np.linalg.norm(ref, axis=1)
                    print(f"{n:9d} {kernel:11s} group={g:4d} tile={tile} sinks={sinks} "
                          f"pack={pack} {var or '-'} groups {t['n_groups']:7d} walk {t['walk']:.4f} s "
                          f"inter/sink {inter / n:7.1f} {inter / t['walk']:.3e}/s  median "
                          f"{np.median(err):.2e} p99 {np.percentile(err, 99):.2e}"
                          + (f"  (lists {t['list_walk']:.4f} s, eval {t['list_eval']:.4f} s)"
                             if "list_walk" in t else ""), flush=True)


if __name__ == "__main__":
    main()
