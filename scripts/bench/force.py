#!/usr/bin/env python
"""Throughput and accuracy of hybridtree's forces, ``hybridtree.gravity.accelerations``
(a benchmark, not a test).  Two modes:

rows (the default): one row per tree N x theta x build and per direct-kernel N x variant::

    PYTHONPATH=. python scripts/bench/force.py                 # N = 1e5, 1e6 tree; 16384 direct
    PYTHONPATH=. python scripts/bench/force.py --quick         # about half a minute on 2 cores
    PYTHONPATH=. python scripts/bench/force.py --n 100000 --theta 0.4 0.7 --pytreegrav --json out.json

``--targets``: issue 6's table in one run -- the GPU's direct-kernel rate, walk rate, full
force at 2^24, build share at 2^22, the same code on the CPU OpenCL device
(``--cpu-device``), optionally pytreegrav's CUDA backend on the same particles; the rows as
they come, then the targets with what was measured and whether each is met::

    PYTHONPATH=. python scripts/bench/force.py --targets --device nvidia --cpu-device cpu --peer-cuda
    PYTHONPATH=. python scripts/bench/force.py --targets --device cpu --cpu-device cpu --quick  # smoke

Every case runs one untimed warm-up call (OpenCL kernel compilation, numba JIT),
then ``--repeat`` timed calls; the call with the smallest total time is reported.
Particles: Plummer sphere (Hénon units, seed 1).  Errors are |a - a_ref| / |a_ref|
on ``--sample`` randomly chosen sinks, against float64 direct summation on the host.

Flop convention: one interaction counts as 38 flops (the figure of Warren &
Salmon, used in many GPU N-body papers, for a softened pair force with potential,
reciprocal square root counted as several flops), so
Gflop/s = 38 * interactions/s / 1e9.  For the tree, interactions are particle-particle
plus particle-cell (quadrupole cells cost more than 38 flops; the convention is
kept so that runs compare); for the direct kernel, N (N - 1) pairs.

``--pytreegrav`` also times pytreegrav's numba tree (``Accel``, monopole, all cores).
Its M4 cubic-spline softening uses h = 2.8 eps (the Plummer-equivalent
length), so its errors are measured against pytreegrav's own brute force with
the same h, not against the Plummer reference.  Its theta is defined differently.
"""

from __future__ import annotations

import argparse
import importlib.metadata
import sys
import time
from dataclasses import asdict, dataclass
from typing import Any, Callable

import numpy as np

from common import (FLOPS_PER_INTERACTION, PLUMMER_SEED, add_device, best_of, plummer,
                    reference_acc, rel_errors, run_header, sample_indices, write_json)

from hybridtree.gravity import accelerations
from hybridtree.device.choice import get_runtime

SPLINE_PER_PLUMMER = 2.8          # M4 spline support radius equivalent to Plummer eps


@dataclass
class Row:
    n: int
    method: str
    theta: float | None
    multipole: str | None
    precise: bool | None
    device: str
    build_s: float | None
    walk_s: float | None
    total_s: float
    inter_per_sink: float | None
    inter_per_s: float | None
    median_err: float
    p99_err: float | None
    max_err: float | None

    @property
    def gflops(self) -> float | None:
        return None if self.inter_per_s is None else FLOPS_PER_INTERACTION * self.inter_per_s / 1e9


COLUMNS: list[tuple[str, int, Callable[[Row], Any], str]] = [
    ("N", 9, lambda r: r.n, "d"), ("method", 12, lambda r: r.method, "s"),
    ("theta", 5, lambda r: r.theta, ".2f"), ("multipole", 10, lambda r: r.multipole, "s"),
    ("precise", 7, lambda r: r.precise, "s"), ("device", 10, lambda r: r.device, "s"),
    ("build_s", 9, lambda r: r.build_s, ".4f"), ("walk_s", 9, lambda r: r.walk_s, ".4f"),
    ("total_s", 9, lambda r: r.total_s, ".4f"),
    ("inter/sink", 10, lambda r: r.inter_per_sink, ".1f"),
    ("inter/s", 10, lambda r: r.inter_per_s, ".3e"), ("Gflop/s", 8, lambda r: r.gflops, ".2f"),
    ("median_err", 10, lambda r: r.median_err, ".2e"), ("p99_err", 9, lambda r: r.p99_err, ".2e"),
    ("max_err", 9, lambda r: r.max_err, ".2e"),
]


def format_row(row: Row) -> str:
    cells = []
    for _, width, get, spec in COLUMNS:
        value = get(row)
        text = "-" if value is None else format(str(value) if spec == "s" else value, spec)
        cells.append(f"{text:>{width}}")
    return " ".join(cells)


def table_header() -> str:
    return " ".join(f"{name:>{width}}" for name, width, _, _ in COLUMNS)


def bench_tree(pos: np.ndarray, mass: np.ndarray, idx: np.ndarray, ref: np.ndarray,
               theta: float, args: argparse.Namespace, device: str, build: str) -> Row:
    f = best_of(lambda: accelerations(pos, mass, args.eps, method="tree", theta=theta,
                                      n_leaf=args.n_leaf, n_group=args.n_group,
                                      multipole=args.multipole, device=args.device,
                                      build=build, softening=args.softening),
                args.repeat, lambda r: r.timings["total"])
    err = rel_errors(f.acc[idx], ref)
    t = f.timings
    if args.phases:
        phases = {k: round(v, 4) for k, v in t.items() if isinstance(v, float)}
        print(f"# N={len(pos)} build={build} phases (s): {phases}", flush=True)
    return Row(len(pos), f"tree/{build}", theta, args.multipole, None, device, t["build"], t["walk"],
               t["total"], float(np.mean(f.n_pp + f.n_pc)), f.interactions / t["walk"],
               float(np.median(err)), float(np.percentile(err, 99)), float(err.max()))


def bench_direct(n: int, precise: bool, args: argparse.Namespace, device: str,
                 ref: np.ndarray | None = None) -> Row:
    """Direct kernel on the Plummer sphere of n; ``ref``: its float64 reference
    accelerations on the sampled sinks, if the caller has them already."""
    pos, _, mass = plummer(n, seed=PLUMMER_SEED)
    idx = sample_indices(n, args.sample)
    f = best_of(lambda: accelerations(pos, mass, args.eps, method="direct",
                                      device=args.device, precise=precise,
                                      softening=args.softening),
                args.repeat, lambda r: r.timings["total"])
    if ref is None:
        ref = reference_acc(pos, mass, args.eps, idx, softening=args.softening)
    err = rel_errors(f.acc[idx], ref)
    t = f.timings
    return Row(n, "direct", None, None, precise, device, None, t["kernel"], t["total"],
               float(n - 1), n * (n - 1) / t["kernel"],
               float(np.median(err)), None, float(err.max()))


def bench_pytreegrav(ptg: Any, pos: np.ndarray, mass: np.ndarray, idx: np.ndarray,
                     ref: np.ndarray, theta: float, args: argparse.Namespace) -> Row:
    h = np.full(len(pos), SPLINE_PER_PLUMMER * args.eps)

    def call() -> tuple[np.ndarray, float]:
        t0 = time.perf_counter()
        acc = ptg.Accel(pos, mass, h, theta=theta, parallel=True, method="tree")
        return acc, time.perf_counter() - t0

    acc, seconds = best_of(call, args.repeat, lambda r: r[1], warmup=lambda: ptg.Accel(
        pos[:2000], mass[:2000], h[:2000], theta=theta, parallel=True, method="tree"))
    err = rel_errors(acc[idx], ref)
    return Row(len(pos), "pytreegrav", theta, "monopole", None, "numba-cpu", None, None, seconds,
               None, None, float(np.median(err)), float(np.percentile(err, 99)), float(err.max()))


def bench_peer_cuda(ptg: Any, pos: np.ndarray, mass: np.ndarray, idx: np.ndarray,
                    ref: np.ndarray, theta: float, args: argparse.Namespace) -> Row:
    """pytreegrav's CUDA backend (numba-cuda): CPU tree build, pack+upload, GPU walk."""
    from pytreegrav import cuda as ptg_cuda
    h = np.full(len(pos), SPLINE_PER_PLUMMER * args.eps)

    def call() -> tuple[np.ndarray, float, float, float]:
        t0 = time.perf_counter()
        tree = ptg.ConstructTree(pos, mass, softening=h)
        t1 = time.perf_counter()
        ctx = ptg_cuda.CudaAccel(tree)
        t2 = time.perf_counter()
        acc = ctx(pos, softening=h, theta=theta)
        t3 = time.perf_counter()
        return acc, t1 - t0, t3 - t2, t3 - t0

    acc, build, walk, total = best_of(call, args.repeat, lambda r: r[3])
    err = rel_errors(acc[idx], ref)
    return Row(len(pos), "ptg-cuda", theta, "monopole", None, "numba-cuda", build, walk, total,
               None, None, float(np.median(err)), float(np.percentile(err, 99)), float(err.max()))


def pytreegrav_reference(ptg: Any, pos: np.ndarray, mass: np.ndarray, idx: np.ndarray,
                         eps: float) -> np.ndarray:
    h = SPLINE_PER_PLUMMER * eps
    return ptg.AccelTarget(pos[idx], pos, mass, softening_target=np.full(len(idx), h),
                           softening_source=np.full(len(pos), h), method="bruteforce",
                           parallel=True)


def load_pytreegrav() -> Any | None:
    if not hasattr(np, "row_stack"):   # pytreegrav 1.5 still calls numpy.row_stack (gone in numpy 2.4)
        np.row_stack = np.vstack
    try:
        import pytreegrav
    except ImportError as exc:
        print(f"# note: pytreegrav not importable ({exc}); skipping it", flush=True)
        return None
    version = importlib.metadata.version("pytreegrav")
    print(f"# pytreegrav {version}: Accel(method='tree', parallel=True, monopole), spline "
          f"softening h = {SPLINE_PER_PLUMMER} * eps; errors vs its own brute force with the "
          "same h", flush=True)
    return pytreegrav


def parse_args(argv: list[str] | None) -> argparse.Namespace:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--n", type=int, nargs="+", default=[100_000, 1_000_000], help="tree N")
    p.add_argument("--direct-n", type=int, nargs="*", default=[16384], help="direct-kernel N")
    p.add_argument("--theta", type=float, nargs="+", default=[0.5])
    p.add_argument("--multipole", choices=("monopole", "quadrupole"), default="monopole")
    p.add_argument("--n-leaf", type=int, default=16)
    p.add_argument("--n-group", type=int, default=None, help="default: the device's")
    p.add_argument("--eps", type=float, default=0.01, help="softening length")
    p.add_argument("--softening", choices=("plummer", "spline"), default="plummer",
                   help="pair softening (spline: GADGET's, eps Plummer-equivalent)")
    add_device(p)
    p.add_argument("--sample", type=int, default=1000, help="sinks sampled for the error")
    p.add_argument("--repeat", type=int, default=2, help="timed repeats after one warm-up")
    p.add_argument("--pytreegrav", action="store_true", help="also time pytreegrav at tree N")
    p.add_argument("--peer-cuda", action="store_true",
                   help="also time pytreegrav's CUDA backend (pytreegrav.cuda.CudaAccel) at tree N")
    p.add_argument("--no-precise", action="store_true",
                   help="direct kernel with precise=False only (default: both variants)")
    p.add_argument("--quick", action="store_true",
                   help="tree N = 20000, direct N = 4096, sample 500 (overrides those options)")
    p.add_argument("--build", nargs="+", choices=("device", "host"), default=["device"],
                   help="where the tree is built (each choice is one row)")
    p.add_argument("--phases", action="store_true", help="print every timing phase")
    p.add_argument("--json", metavar="PATH", help="also write all rows as JSON")
    args = p.parse_args(argv)
    if args.quick:
        args.n, args.direct_n, args.sample = [20_000], [4096], 500
    if args.repeat < 1 or args.sample < 1:
        p.error("--repeat and --sample must be >= 1")
    return args


def main(argv: list[str] | None = None) -> int:
    argv = sys.argv[1:] if argv is None else list(argv)
    if "--targets" in argv:
        argv.remove("--targets")
        return main_targets(argv)
    args = parse_args(argv)
    info = get_runtime(args.device).info
    device = f"{info.platform_index}:{info.device_index} {info.kind}"   # full label in header
    header = run_header(info.label)
    print(header, flush=True)
    ptg = load_pytreegrav() if (args.pytreegrav or args.peer_cuda) else None
    print(table_header(), flush=True)
    rows: list[Row] = []

    def emit(row: Row) -> None:
        rows.append(row)
        print(format_row(row), flush=True)

    for n in args.n:
        pos, _, mass = plummer(n, seed=PLUMMER_SEED)
        idx = sample_indices(n, args.sample)
        ref = reference_acc(pos, mass, args.eps, idx, args.device,        # shared by every theta
                            softening=args.softening)
        ptg_ref = pytreegrav_reference(ptg, pos, mass, idx, args.eps) if ptg else None
        for theta in args.theta:
            for build in args.build:
                emit(bench_tree(pos, mass, idx, ref, theta, args, device, build))
            if ptg is not None and args.pytreegrav:
                emit(bench_pytreegrav(ptg, pos, mass, idx, ptg_ref, theta, args))
            if ptg is not None and args.peer_cuda:
                try:
                    emit(bench_peer_cuda(ptg, pos, mass, idx, ptg_ref, theta, args))
                except (ImportError, RuntimeError) as exc:
                    print(f"# note: pytreegrav CUDA backend unavailable ({exc})", flush=True)
    for n in args.direct_n:
        for precise in ((False,) if args.no_precise else (True, False)):
            emit(bench_direct(n, precise, args, device))

    meta = {"header": header, "device": info.label, "argv": sys.argv[1:],
            "flops_per_interaction": FLOPS_PER_INTERACTION}
    write_json(args.json, {"meta": meta, "rows": [{**asdict(r), "gflops": r.gflops}
                                                  for r in rows]})
    return 0


# -- --targets: issue 6's table -----------------------------------------------------------

#: The chip's arithmetic limit for the direct kernel that the issue quotes (pairs/s).
DIRECT_LIMIT = 2.5e12
TARGETS = {"direct": 2.0e12, "walk": 1.0e12, "force_24": 0.10, "median_24": 3e-4,
           "build_share_22": 0.20}
_T0 = time.perf_counter()


def _elapsed() -> None:
    print(f"# {time.perf_counter() - _T0:.0f} s into the run", flush=True)


def _namespace(args: argparse.Namespace, device: str) -> argparse.Namespace:
    """The option set of the rows mode that bench_tree and bench_direct read."""
    return argparse.Namespace(eps=0.01, n_leaf=16, n_group=None, multipole="monopole",
                              device=device, repeat=args.repeat, phases=True,
                              sample=args.sample, softening=args.softening)


def tree_rows(ns: argparse.Namespace, sizes: list[int], label: str, ptg,
              refs: dict[int, np.ndarray]) -> list[Row]:
    """Tree rows (and the peer's) per N; ``refs``: float64 references on the sampled sinks
    by N, filled here and shared by every row of this run (same seeds, same eps: the
    reference at 2^20 takes a minute)."""
    rows = []
    for n in sizes:
        pos, _, mass = plummer(n, seed=PLUMMER_SEED)
        idx = sample_indices(n, ns.sample)
        if n not in refs:
            refs[n] = reference_acc(pos, mass, ns.eps, idx, device=ns.device)
        ref = refs[n]
        rows.append(bench_tree(pos, mass, idx, ref, 0.5, ns, label, "device"))
        print(format_row(rows[-1]), flush=True)
        _elapsed()
        if ptg is not None:
            pref = pytreegrav_reference(ptg, pos, mass, idx, ns.eps)
            rows.append(bench_peer_cuda(ptg, pos, mass, idx, pref, 0.5, ns))
            print(format_row(rows[-1]), flush=True)
            _elapsed()
    return rows


def targets(gpu: list[Row], cpu: list[Row], n_direct: int, n_force: int,
            n_share: int, builds: dict[int, float]) -> list[tuple[str, str, str]]:
    """(target, measured, met) lines."""
    tree = {r.n: r for r in gpu if r.method == "tree/device"}
    plain = [r for r in gpu if r.method == "direct" and r.n == n_direct and not r.precise]
    out = []
    if plain:
        rate = plain[0].inter_per_s
        out.append((f"direct kernel >= {TARGETS['direct']:.1e} pairs/s at N = {n_direct}",
                    f"{rate:.3e} ({rate / DIRECT_LIMIT:.0%} of {DIRECT_LIMIT:.1e})",
                    "yes" if rate >= TARGETS["direct"] else "no"))
    if tree:
        best = max(r.inter_per_s for r in tree.values())
        rates = ", ".join(f"{r.inter_per_s:.2e} (N={n})" for n, r in sorted(tree.items()))
        out.append((f"walk >= {TARGETS['walk']:.0e} interactions/s", rates,
                    "yes" if best >= TARGETS["walk"] else "no"))
    if n_force in tree:
        r = tree[n_force]
        ok = r.total_s <= TARGETS["force_24"] and r.median_err <= TARGETS["median_24"]
        out.append((f"full force at N = {n_force} <= {TARGETS['force_24']} s, median <= 3e-4",
                    f"{r.total_s:.4f} s, median {r.median_err:.2e}", "yes" if ok else "no"))
    if n_share in tree:
        share = builds[n_share] / tree[n_share].total_s
        out.append((f"build share at N = {n_share} <= 20 %",
                    f"{share:.0%} ({builds[n_share]:.4f} of {tree[n_share].total_s:.4f} s)",
                    "yes" if share <= TARGETS["build_share_22"] else "no"))
    for c in cpu:
        g = [r for r in gpu if r.n == c.n and r.method == c.method
             and (c.precise is None or r.precise == c.precise)]
        if g:
            out.append((f"GPU / CPU device, {c.method} N = {c.n}",
                        f"total {c.total_s / g[0].total_s:.1f}x, kernel "
                        f"{c.walk_s / g[0].walk_s:.1f}x", "reported"))
    return out


def main_targets(argv: list[str]) -> int:
    p = argparse.ArgumentParser(description="force.py --targets: issue 6's table in one run")
    add_device(p, default="gpu")
    p.add_argument("--cpu-device", default="cpu", help="the CPU OpenCL device to compare")
    p.add_argument("--softening", choices=("plummer", "spline"), default="plummer",
                   help="pair softening (spline: GADGET's, eps Plummer-equivalent)")
    p.add_argument("--peer-cuda", action="store_true", help="pytreegrav's CUDA backend too")
    p.add_argument("--quick", action="store_true", help="small N (a smoke run)")
    p.add_argument("--repeat", type=int, default=2)
    p.add_argument("--sample", type=int, default=1000)
    p.add_argument("--json", metavar="PATH")
    args = p.parse_args(argv)
    if args.quick:
        tree_n, n_direct, n_force, n_share, cpu_tree, cpu_direct = \
            [4096, 16384], 4096, 16384, 4096, 4096, 2048
    else:
        tree_n, n_direct, n_force, n_share, cpu_tree, cpu_direct = \
            [1 << 20, 1 << 22, 1 << 24], 1 << 20, 1 << 24, 1 << 22, 1 << 20, 1 << 16
    gpu_label = get_runtime(args.device).info.label
    cpu_label = get_runtime(args.cpu_device).info.label
    print(run_header(gpu_label) + f"  cpu device={cpu_label}")
    print(table_header(), flush=True)
    ptg = load_pytreegrav() if args.peer_cuda else None
    ns = _namespace(args, args.device)
    builds: dict[int, float] = {}
    gpu = []
    refs: dict[int, np.ndarray] = {}
    for r in tree_rows(ns, tree_n, args.device, ptg, refs):
        gpu.append(r)
        if r.method == "tree/device":
            builds[r.n] = r.build_s
    for precise in (False, True):
        gpu.append(bench_direct(n_direct, precise, ns, args.device, refs.get(n_direct)))
        print(format_row(gpu[-1]), flush=True)
        _elapsed()
    cns = _namespace(args, args.cpu_device)
    cns.repeat = 1
    cpu = tree_rows(cns, [cpu_tree], args.cpu_device, None, refs)
    cpu.append(bench_direct(cpu_direct, True, cns, args.cpu_device, refs.get(cpu_direct)))
    print(format_row(cpu[-1]), flush=True)
    if cpu_direct != n_direct:      # the GPU's row at the CPU's direct N, for the ratio
        gpu.append(bench_direct(cpu_direct, True, ns, args.device, refs.get(cpu_direct)))
        print(format_row(gpu[-1]), flush=True)
    lines = targets(gpu, cpu, n_direct, n_force, n_share, builds)
    print("\n| target | measured | met? |\n|---|---|---|")
    for t, m, ok in lines:
        print(f"| {t} | {m} | {ok} |")
    write_json(args.json, {"gpu": gpu_label, "cpu": cpu_label,
                           "rows": [asdict(r) for r in gpu + cpu],
                           "targets": [dict(zip(("target", "measured", "met"), x))
                                       for x in lines]})
    return 0


if __name__ == "__main__":
    sys.exit(main())
