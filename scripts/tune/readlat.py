#!/usr/bin/env python
"""How long the host waits for a small read after the device's last kernel (a tuning
aid, not a test): a kernel (``nonfinite`` over ``--n`` doubles, its device time from
its profiling event) and then a 4-byte read, the host's clock around both, for four
ways of reading: the driver's blocking read into numpy memory, a non-blocking read
polled, and both into a pinned (ALLOC_HOST_PTR, mapped) area.  The host's time minus
the kernel's device time is what a read costs the step (launch, copy, wake-up).

    PYTHONPATH=. python scripts/tune/readlat.py --device nvidia
"""

from __future__ import annotations

import argparse
import statistics
import time

import numpy as np
import pyopencl as cl

from hybridtree.device.choice import get_runtime
from hybridtree.device.kernels import launch
from hybridtree.device.reduce import reduce_defines, reduce_work_group


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--device", default="")
    p.add_argument("--n", type=int, default=1 << 24)
    p.add_argument("--repeat", type=int, default=200)
    args = p.parse_args()
    rt = get_runtime(args.device or None)
    n = args.n
    data = rt.to_device(np.ones(n))
    flag = rt.to_device(np.zeros(1, np.int32))
    mf = cl.mem_flags
    pinned_buf = cl.Buffer(rt.context, mf.READ_WRITE | mf.ALLOC_HOST_PTR, 64)
    pinned, _ = cl.enqueue_map_buffer(rt.queue, pinned_buf, cl.map_flags.READ | cl.map_flags.WRITE,
                                      0, (16,), np.int32, is_blocking=True)
    defines = reduce_defines(reduce_work_group(rt.info), sum_mode=rt.info.sum_mode)
    done = cl.command_execution_status.COMPLETE

    def poll(ev):
        rt.queue.flush()
        while ev.command_execution_status != done:
            pass

    plain = np.empty(1, np.int32)
    ways = {
        "blocking, numpy": lambda: cl.enqueue_copy(rt.queue, plain, flag),
        "polled, numpy": lambda: poll(cl.enqueue_copy(rt.queue, plain, flag, is_blocking=False)),
        "blocking, pinned": lambda: cl.enqueue_copy(rt.queue, pinned[:1], flag),
        "polled, pinned": lambda: poll(cl.enqueue_copy(rt.queue, pinned[:1], flag,
                                                       is_blocking=False)),
        "finish only": lambda: rt.queue.finish(),
    }
    for name, read in ways.items():
        over = []
        for i in range(args.repeat + 5):
            rt.queue.finish()
            t0 = time.perf_counter()
            launch(rt, "reduce.cl", "nonfinite", n, np.int32(n), data, flag, defines=defines,
                   local=reduce_work_group(rt.info))
            read()
            t1 = time.perf_counter()
            if i >= 5:
                over.append(t1 - t0)
        print(f"{name:18s} host {1e3 * statistics.median(over):7.3f} ms median, "
              f"{1e3 * min(over):7.3f} min", flush=True)
    # the kernel's own device time, from a profiled launch
    if rt.queue.properties & cl.command_queue_properties.PROFILING_ENABLE:
        times = []
        for _ in range(20):
            rt.queue.finish()
            mark = cl.enqueue_marker(rt.queue)
            launch(rt, "reduce.cl", "nonfinite", n, np.int32(n), data, flag, defines=defines,
                   local=reduce_work_group(rt.info))
            ev = cl.enqueue_marker(rt.queue)
            ev.wait()
            times.append(1e-9 * (ev.profile.end - mark.profile.end))
        print(f"kernel device time {1e3 * statistics.median(times):.3f} ms median")
    empty = []
    for _ in range(args.repeat):
        rt.queue.finish()
        t0 = time.perf_counter()
        cl.enqueue_copy(rt.queue, plain, flag)
        empty.append(time.perf_counter() - t0)
    print(f"idle queue, blocking 4-byte read: {1e3 * statistics.median(empty):.3f} ms median")
    # what the host pays for the markers that time a run's phases (Clock.device), and for
    # a launch, right after a read (the queue empty) and behind a running kernel
    for busy in (False, True):
        marks, launches = [], []
        for _ in range(args.repeat):
            rt.queue.finish()
            if busy:
                launch(rt, "reduce.cl", "nonfinite", n, np.int32(n), data, flag, defines=defines,
                       local=reduce_work_group(rt.info))
            t0 = time.perf_counter()
            cl.enqueue_marker(rt.queue)
            t1 = time.perf_counter()
            launch(rt, "reduce.cl", "nonfinite", 1, np.int32(1), data, flag, defines=defines,
                   local=reduce_work_group(rt.info))
            launches.append(time.perf_counter() - t1)
            marks.append(t1 - t0)
        print(f"{'behind a kernel' if busy else 'queue empty':15s}: enqueue_marker "
              f"{1e3 * statistics.median(marks):.3f} ms, a launch {1e3 * statistics.median(launches):.3f}"
              f" ms median", flush=True)


if __name__ == "__main__":
    main()
