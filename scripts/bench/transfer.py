#!/usr/bin/env python
"""Host <-> device copy speed (a benchmark, not a test): what one force evaluation moves.

Upload: float64 positions (N x 3) and masses (N); download: float64 accelerations
(N x 3), potentials (N) and int32 interaction counts (N x 2), as hybridtree.gravity
does.  Every way is timed best of ``--repeat`` after a warm-up:

- ``pageable``: plain copies from and to numpy arrays (HYBRIDTREE_STAGING=never);
- ``staged``: through pinned staging memory in chunks (hybridtree.device.transfer), per chunk size;
- ``dma``: the pinned area to the device and back with no host copy (the bus's limit).

    PYTHONPATH=. python scripts/bench/transfer.py --device nvidia --n 4194304 16777216
"""

from __future__ import annotations

import argparse
import os

import numpy as np
import pyopencl as cl
from common import add_device, timed

from hybridtree.device import transfer
from hybridtree.device.choice import get_runtime
from hybridtree.device.runtime import Runtime


def best(fn, repeat: int) -> float:
    """Best wall seconds of ``repeat`` calls after a warm-up."""
    return timed(fn, repeat, warmup=True)[1]


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    add_device(p)
    p.add_argument("--n", type=int, nargs="+", default=[1 << 20])
    p.add_argument("--chunk-mb", type=int, nargs="+", default=[4, 16, 64])
    p.add_argument("--repeat", type=int, default=3)
    args = p.parse_args()
    shared = get_runtime(args.device)
    # a runtime of its own on the process's context: the copy options set per way stay here
    rt = Runtime(shared.info, shared.context, shared.queue)
    print(f"# {rt.info.label}  host threads {transfer.copies(rt).threads()._max_workers}")
    for n in args.n:
        rng = np.random.default_rng(0)
        pos, mass = rng.normal(size=(n, 3)), rng.uniform(size=n)
        acc, pot, cnt = np.empty((n, 3)), np.empty(n), np.empty((n, 2), np.int32)
        up_bytes, down_bytes = pos.nbytes + mass.nbytes, acc.nbytes + pot.nbytes + cnt.nbytes
        d_acc, d_pot, d_cnt = rt.empty(acc.nbytes), rt.empty(pot.nbytes), rt.empty(cnt.nbytes)

        def up():
            transfer.upload(rt, [pos, mass], ["bench_pos", "bench_mass"])
            rt.queue.finish()

        def down():      # fresh result arrays, as a force call returns
            a, q, c = np.empty((n, 3)), np.empty(n), np.empty((n, 2), np.int32)
            transfer.download(rt, [(d_acc, a), (d_pot, q), (d_cnt, c)])

        ways = [("pageable", "never", transfer.CHUNK)]
        ways += [(f"staged {mb} MB", "always", mb << 20) for mb in args.chunk_mb]
        for label, policy, chunk in ways:
            os.environ["HYBRIDTREE_STAGING"] = policy
            transfer.release(rt)        # the runtime's copies anew, in chunks of this size
            rt.copies = transfer.Copies(transfer.CopyOptions(chunk=chunk))
            tu, td = best(up, args.repeat), best(down, args.repeat)
            print(f"N={n:9d} {label:15s} up {tu:.4f} s {up_bytes / tu / 1e9:6.2f} GB/s   "
                  f"down {td:.4f} s {down_bytes / td / 1e9:6.2f} GB/s", flush=True)
        os.environ["HYBRIDTREE_STAGING"] = "always"
        area = transfer.copies(rt).staging.area(rt, max(up_bytes, down_bytes))
        d_up = rt.empty(up_bytes)

        def dma_up():
            cl.enqueue_copy(rt.queue, d_up, area[:up_bytes], is_blocking=False)
            rt.queue.finish()

        def dma_down():
            cl.enqueue_copy(rt.queue, area[:down_bytes], d_up if down_bytes <= up_bytes
                            else rt.empty(down_bytes), is_blocking=True)

        tu, td = best(dma_up, args.repeat), best(dma_down, args.repeat)
        print(f"N={n:9d} {'dma (pinned)':15s} up {tu:.4f} s {up_bytes / tu / 1e9:6.2f} GB/s   "
              f"down {td:.4f} s {down_bytes / td / 1e9:6.2f} GB/s", flush=True)
        t = best(lambda: np.copyto(np.empty_like(pos), pos), args.repeat)
        print(f"N={n:9d} {'numpy copy':15s} {pos.nbytes / t / 1e9:6.2f} GB/s into fresh memory "
              f"(one thread)", flush=True)
    transfer.release(rt)


if __name__ == "__main__":
    main()
