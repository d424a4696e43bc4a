#!/usr/bin/env python
"""Radix-sort tuning sweep (a benchmark, not a test): work-group size x keys per item x
digit bits, on random 63-bit keys (``--keys plummer``: the Morton keys of a Plummer sphere in
the caller's order, what a run's build sorts); each tuning's order is checked against
numpy's stable argsort.  Buffers come from one workspace per tuning (as in a run: no
allocation in the timed sorts); host clock around the enqueued passes and a finish.

    PYTHONPATH=. python scripts/tune/sort.py --device nvidia --n 4194304 16777216 \\
        --tuning 256,16,8,4 64,32,8,8 128,32,8,6
"""

from __future__ import annotations

import argparse
import time
from dataclasses import astuple

import numpy as np
import pyopencl as cl

from hybridtree.device.choice import get_runtime
from hybridtree.device.transfer import Workspace
from hybridtree.gravity.tree.device_sort import Tuning, preferred_tuning, radix_sort
from hybridtree.gravity.tree.morton import bounding_cube, integer_coords, morton_keys
from hybridtree.ics import plummer


def _keys(kind: str, n: int) -> np.ndarray:
    if kind == "random":
        return np.random.default_rng(0).integers(0, 2**63, n, dtype=np.uint64)
    pos = plummer(n, seed=1)[0]
    return morton_keys(integer_coords(pos, bounding_cube(pos, power_of_two=True)))


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--device", default=None)
    p.add_argument("--n", type=int, nargs="+", default=[1 << 20])
    p.add_argument("--tuning", nargs="+", default=None,
                   metavar="WG,ITEMS,SCAN_ITEMS,BITS[,SORTED_STORES]",
                   help="default: the device's own tuning (device_sort.preferred_tuning)")
    p.add_argument("--repeat", type=int, default=3)
    p.add_argument("--keys", choices=("random", "plummer"), default="random")
    args = p.parse_args()
    rt = get_runtime(args.device)
    print(f"# {rt.info.label}")
    if args.tuning is None:
        args.tuning = [",".join(str(v) for v in astuple(preferred_tuning(rt.info)))]
    for n in args.n:
        keys = _keys(args.keys, n)
        want = np.argsort(keys, kind="stable")
        d_keys = rt.to_device(keys)
        for spec in args.tuning:
            t = Tuning(*(int(v) for v in spec.split(",")))
            try:
                work = Workspace(rt)
                _, order = radix_sort(rt, d_keys, n, 63, tuning=t, alloc=work)
                got = np.empty(n, np.uint32)
                cl.enqueue_copy(rt.queue, got, order)
                ok = np.array_equal(got, want)
                best = np.inf
                for _ in range(args.repeat):
                    rt.queue.finish()
                    t0 = time.perf_counter()
                    radix_sort(rt, d_keys, n, 63, tuning=t, alloc=work)
                    rt.queue.finish()
                    best = min(best, time.perf_counter() - t0)
            except Exception as exc:          # a tuning the device cannot build or run
                print(f"N={n:9d} {args.keys} {spec:14s} failed: {exc!r:.150}", flush=True)
                continue
            finally:
                work = None                   # its buffers go before the next tuning's
            print(f"N={n:9d} {args.keys} {spec:14s} {best * 1e3:8.2f} ms  {n / best / 1e9:6.2f} Gkeys/s  "
                  f"order {'ok' if ok else 'WRONG'}", flush=True)


if __name__ == "__main__":
    main()
