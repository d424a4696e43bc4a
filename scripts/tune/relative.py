"""Where the relative opening criterion's walk spends its time (a tuning aid, not a test).

For each model and criterion: one device tree (built with theta, or theta_max for the
relative rows), a_old from a geometric theta = 0.5 walk, then the list walk with
``WalkTuning(profile=True)`` (each kernel waited for): seconds in walk_lists and in eval_lists,
interactions per particle and per second of each kernel, and the list lengths per group
(mean, p99, max, and the mean over warps of 32 consecutive groups of the longest list
over the mean list: the lock-step cost of walk_lists's one-work-item-per-group loop).

    PYTHONPATH=. python scripts/tune/relative.py --device nvidia --n 4194304 \
        --variants CHUNKS=1 CHUNKS=8
    PYTHONPATH=. python scripts/tune/relative.py --n 4096 --models plummer --theta 0.5 \
        --alpha 0.002 --repeat 1
"""

from __future__ import annotations

import argparse
import time

import numpy as np
import pyopencl as cl

from hybridtree.device.choice import get_runtime
from hybridtree.gravity import list_walk
from hybridtree.gravity import walk as treewalk
from hybridtree.gravity.criterion import Relative
from hybridtree.gravity.tree.device_build import build_device_tree, device_groups
from hybridtree.gravity.tuning import TUNING, WalkTuning
from hybridtree.gravity.walk import tree_forces
from hybridtree.ics import hernquist_satellite, plummer


def group_ranges(tree, n_group: int) -> tuple[np.ndarray, np.ndarray]:
    """(first sink and count of each of the walk's sink groups, in tree order; caller
    index of each particle in tree order), read back from the device."""
    g = device_groups(tree, n_group, TUNING.pack_groups)
    ranges = np.empty((g.n_groups, 2), np.int32)
    cl.enqueue_copy(tree.rt.queue, ranges, g.ranges)
    order = np.empty(tree.n, np.uint32)
    cl.enqueue_copy(tree.rt.queue, order, tree.order)
    return ranges, order.astype(np.int64)


def group_lists(tree, n_group: int, n_pp: np.ndarray, n_pc: np.ndarray) -> np.ndarray:
    """List length (entries) of each group in tree order: every sink of a group has its
    group's list (less its own particle)."""
    ranges, order = group_ranges(tree, n_group)
    return np.maximum.reduceat((n_pp + n_pc)[order], ranges[:, 0])


def shaped_a_old(rt, pos, mass, a_old: np.ndarray, mode: str, n_group: int,
                 theta_max: float) -> np.ndarray:
    """a_old for an experiment on the floors' spread (see --floor-mode)."""
    if mode == "plain":
        return a_old
    mag = np.linalg.norm(a_old, axis=1)
    if mode == "pow2":
        return a_old * (np.exp2(np.floor(np.log2(mag))) / mag)[:, None]
    ranges, order = group_ranges(build_device_tree(rt, pos, mass, theta_max, 16, "monopole"),
                                 n_group)
    gmin = np.minimum.reduceat(mag[order], ranges[:, 0])
    pad = -len(gmin) % 32
    wmin = np.concatenate([gmin, np.full(pad, np.inf)]).reshape(-1, 32).min(axis=1)
    per_group = np.repeat(wmin, 32)[:len(gmin)]
    out = np.empty_like(a_old)
    out[order] = np.repeat(per_group, ranges[:, 1])[:, None] * np.array([1.0, 0.0, 0.0])
    return out


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--device", default=None)
    p.add_argument("--n", type=int, nargs="+", default=[1 << 18])
    p.add_argument("--models", nargs="+", default=["plummer", "cusp"])
    p.add_argument("--theta", type=float, nargs="+", default=[0.5, 0.7])
    p.add_argument("--alpha", type=float, nargs="+", default=[0.0005, 0.002, 0.005])
    p.add_argument("--theta-max", type=float, default=None)
    p.add_argument("--theta-min", type=float, default=0.25)
    p.add_argument("--eps", type=float, default=0.01)
    p.add_argument("--repeat", type=int, default=2)
    p.add_argument("--floor-mode", nargs="+", default=["plain"],
                   choices=["plain", "pow2", "warp"],
                   help="experiment: a_old as it is, its magnitude rounded down to a power "
                        "of 2, or the smallest of 32 consecutive groups for all of them")
    p.add_argument("--n-group", type=int, nargs="+", default=[0],
                   help="sinks per group (0: the device's default)")
    p.add_argument("--variants", nargs="*", default=[""], metavar="KEY=V,KEY=V",
                   help="walk define sets to compare (e.g. CHUNKS=1 CHUNKS=8); '' = defaults")
    args = p.parse_args()
    from hybridtree.config import SCHEMA
    theta_max = args.theta_max or SCHEMA["gravity"]["theta_max"].default
    rt = get_runtime(args.device)
    print(f"# {rt.info.label}  eps={args.eps} theta_max={theta_max} "
          f"theta_min={args.theta_min}", flush=True)
    print("model N criterion | per_particle | walk_lists s | eval_lists s | total s | "
          "eval ints/s | all ints/s | list mean p99 max | warp max/mean | cell share")
    for name in args.models:
        for n in args.n:
            pos, _, mass = (plummer if name == "plummer" else hernquist_satellite)(n, seed=1)
            ref_tree = build_device_tree(rt, pos, mass, 0.5, 16, "monopole")
            a_old = tree_forces(rt, ref_tree, args.eps)[0]
            olds = {m: shaped_a_old(rt, pos, mass, a_old, m, treewalk.default_group(
                rt.info.kind, n, relative=True), theta_max) for m in args.floor_mode}
            rows = [("geo", t, None) for t in args.theta] + \
                   [("rel", a, Relative(a, theta_max, args.theta_min, olds[m]), m)
                    for a in args.alpha for m in args.floor_mode]
            rows = [r if len(r) == 4 else r + ("",) for r in rows]
            for (kind, knob, floor, mode), var, ng in [(r, v, g) for r in rows for v in args.variants
                                                 for g in args.n_group]:
                opts = dict(kv.split("=", 1) for kv in var.split(",") if kv)
                list_walk.list_room(rt).room = None
                tree = build_device_tree(rt, pos, mass, theta_max if floor else knob, 16,
                                         "monopole")
                tree_forces(rt, tree, args.eps, ng or None, criterion=floor,
                            options=opts)                           # warm-up
                best = None
                for _ in range(args.repeat):
                    t0 = time.perf_counter()
                    acc, pot, n_pp, n_pc, t = tree_forces(rt, tree, args.eps, ng or None,
                                                          criterion=floor, options=opts,
                                                          tuning=WalkTuning(profile=True))
                    t["total"] = time.perf_counter() - t0
                    if best is None or t["total"] < best["total"]:
                        best = t
                ints = float(np.sum(n_pp, dtype=np.int64) + np.sum(n_pc, dtype=np.int64))
                size = ng or treewalk.default_group(rt.info.kind, n, floor is not None)
                lens = group_lists(tree, size, n_pp, n_pc).astype(np.float64)
                w = len(lens) // 32 * 32
                warp = lens[:w].reshape(-1, 32)
                warp_ratio = float(np.mean(warp.max(axis=1)) / max(np.mean(warp), 1.0))
                lw, le = best.get("list_walk", 0.0), best.get("list_eval", best["walk"])
                label = (f"theta={knob}" if kind == "geo" else f"alpha={knob}") + \
                    (f" [{var}]" if var else "") + (f" n_group={ng}" if ng else "") + \
                    (f" floor={mode}" if mode not in ("", "plain") else "")
                print(f"{name} {n} {label} | {ints / n:.0f} | {lw:.4f} | {le:.4f} | "
                      f"{best['total']:.4f} | {ints / le:.3e} | {ints / (lw + le):.3e} | "
                      f"{lens.mean():.0f} {np.percentile(lens, 99):.0f} {lens.max():.0f} | "
                      f"{warp_ratio:.2f} | {np.sum(n_pc, dtype=np.int64) / ints:.2f}", flush=True)


if __name__ == "__main__":
    main()
