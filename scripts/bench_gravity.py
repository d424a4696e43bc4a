#!/usr/bin/env python
"""Throughput and accuracy benchmark of hybridtree's gravity (a benchmark, not a test).

Usage (from the repository root)::

    PYTHONPATH=. python scripts/bench_gravity.py                 # N = 1e5, 1e6 tree; 16384 direct
    PYTHONPATH=. python scripts/bench_gravity.py --quick         # about half a minute on 2 cores
    PYTHONPATH=. python scripts/bench_gravity.py --n 100000 --theta 0.4 0.7 --pytreegrav --json out.json

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
import datetime
import importlib.metadata
import json
import platform
import socket
import sys
import time
from dataclasses import asdict, dataclass
from typing import Any, Callable, TypeVar

import numpy as np

from hybridtree.gravity import accelerations, direct_reference
from hybridtree.ics import plummer
from hybridtree.device.choice import get_runtime

T = TypeVar("T")
FLOPS_PER_INTERACTION = 38
SPLINE_PER_PLUMMER = 2.8          # M4 spline support radius equivalent to Plummer eps
PLUMMER_SEED, SAMPLE_SEED = 1, 2


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


def run_header(device_label: str) -> str:
    now = datetime.datetime.now(datetime.timezone.utc).strftime("%Y-%m-%d %H:%M:%S UTC")
    return (f"# {now}  host={socket.gethostname()}  python={platform.python_version()}  "
            f"numpy={np.__version__}  device={device_label}")


def sample_indices(n: int, k: int) -> np.ndarray:
    return np.random.default_rng(SAMPLE_SEED).choice(n, size=min(k, n), replace=False)


def reference_acc(pos: np.ndarray, mass: np.ndarray, eps: float, idx: np.ndarray,
                  device: str | None = None) -> np.ndarray:
    # sinks= skips no self pair, but that pair has zero separation: zero force, so acc is exact
    if len(pos) > 1 << 21:   # float64 numpy takes minutes there; hi/lo direct kernel: ~1e-6
        return accelerations(pos, mass, eps, method="direct", sinks=pos[idx],
                             device=device).acc
    return direct_reference(pos, mass, eps, sinks=pos[idx])[0]


def rel_errors(acc: np.ndarray, ref: np.ndarray) -> np.ndarray:
    return np.linalg.norm(acc - ref, axis=1) / np.linalg.norm(ref, axis=1)


def best_of(call: Callable[[], T], repeat: int, seconds: Callable[[T], float],
            warmup: Callable[[], object] | None = None) -> T:
    (warmup or call)()    # compilation must not count as run time
    return min((call() for _ in range(repeat)), key=seconds)


def bench_tree(pos: np.ndarray, mass: np.ndarray, idx: np.ndarray, ref: np.ndarray,
               theta: float, args: argparse.Namespace, device: str, build: str) -> Row:
    f = best_of(lambda: accelerations(pos, mass, args.eps, method="tree", theta=theta,
                                      n_leaf=args.n_leaf, n_group=args.n_group,
                                      multipole=args.multipole, device=args.device,
                                      build=build),
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
                                      device=args.device, precise=precise),
                args.repeat, lambda r: r.timings["total"])
    if ref is None:
        ref = reference_acc(pos, mass, args.eps, idx)
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
    p.add_argument("--eps", type=float, default=0.01, help="Plummer softening")
    p.add_argument("--device", default=None, help="OpenCL device choice (hybridtree.device.choice)")
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
        ref = reference_acc(pos, mass, args.eps, idx, args.device)        # shared by every theta
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

    if args.json:
        meta = {"header": header, "device": info.label, "argv": sys.argv[1:],
                "flops_per_interaction": FLOPS_PER_INTERACTION}
        out = [{**asdict(r), "gflops": r.gflops} for r in rows]
        with open(args.json, "w") as fh:
            json.dump({"meta": meta, "rows": out}, fh, indent=1)
    return 0


if __name__ == "__main__":
    sys.exit(main())
