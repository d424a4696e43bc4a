#!/usr/bin/env python
"""Device time of every kernel in a step of ``hybridtree.Simulation`` (a tuning aid, not
a test): each kernel launch's profiling event (queued → end, start → end), summed per
kernel name over ``--steps`` steps, beside the caller's wall clock per step.  The gap
between the wall and the summed kernel time is launch overhead, host work and waits.

    PYTHONPATH=. python scripts/tune/kernels.py --device nvidia --n 4194304 --steps 8
    PYTHONPATH=. python scripts/tune/kernels.py --device cpu --n 65536 --steps 2
"""

from __future__ import annotations

import argparse
import collections
import json
import sys
import time

import numpy as np
import pyopencl as cl

from hybridtree.ics import plummer

_EVENTS: list[tuple[str, cl.Event]] = []
_COPIES: list[tuple[str, cl.Event, float]] = []
_CALL = cl.Kernel.__call__
_COPY = cl.enqueue_copy


_HOST: list[float] = []          # host clock after each recorded launch
_GC: list[list[float]] = []       # [start, stop, generation] of each collection


_SLOW: list[tuple[float, str]] = []   # host calls over 0.3 ms: (ms, what)


_READ: list = [None]              # (where, host clock) of the last read_small's return
_AFTER: list[tuple[str, float]] = []  # host ms from a read's return to the next launch


def _recording_call(self, *args, **kwargs):
    t0 = time.perf_counter()
    if _READ[0] is not None:
        _AFTER.append((f"{_READ[0][0]} -> {self.function_name}", (t0 - _READ[0][1]) * 1e3))
        _READ[0] = None
    ev = _CALL(self, *args, **kwargs)
    t1 = time.perf_counter()
    if t1 - t0 > 3e-4:
        _SLOW.append(((t1 - t0) * 1e3, f"enqueue {self.function_name}"))
    _EVENTS.append((self.function_name, ev))
    _HOST.append(t1)
    return ev


def _timed(fn, label):
    def wrapper(*args, **kwargs):
        t0 = time.perf_counter()
        out = fn(*args, **kwargs)
        dt = time.perf_counter() - t0
        if dt > 3e-4:
            names = [a for a in args if isinstance(a, str)]
            _SLOW.append((dt * 1e3, f"{label} {names[:1]}"))
        return out
    return wrapper


def _patch_host_calls() -> list:
    """Wrap the buffer allocators with timers; returns what to undo."""
    from hybridtree.device import transfer
    from hybridtree.gravity import walk
    undo = [(transfer.Workspace, "__call__", transfer.Workspace.__call__),
            (transfer, "scratch", transfer.scratch), (walk, "scratch", walk.scratch),
            (transfer, "wait_for", transfer.wait_for)]
    transfer.Workspace.__call__ = _timed(transfer.Workspace.__call__, "workspace")
    transfer.scratch = walk.scratch = _timed(transfer.scratch, "scratch")
    wait = transfer.wait_for

    def recording_wait(event):               # read_small's wait: a blocking read
        t0 = time.perf_counter()
        wait(event)
        t1 = time.perf_counter()
        where = _caller()
        _COPIES.append((where, event, t1 - t0))
        _READ[0] = (where, t1)
    transfer.wait_for = recording_wait
    return undo


def _gc_watch(phase: str, info: dict) -> None:
    if phase == "start":
        _GC.append([time.perf_counter(), 0.0, info["generation"]])
    elif _GC:
        _GC[-1][1] = time.perf_counter()


def _caller() -> str:
    """file:line of the innermost hybridtree frame that is not this script (nor
    read_small's, whose caller is the one that waits).  Frames, not
    traceback.extract_stack: that reads source lines, 0.2-0.4 ms a call, which showed
    as device gaps after every blocking read (session 22)."""
    f = sys._getframe(2)
    while f is not None:
        name = f.f_code.co_filename
        if ("hybridtree/" in name and "scripts/" not in name
                and not name.endswith("device/transfer.py")):
            return f"{name.rsplit('hybridtree/', 1)[1]}:{f.f_lineno}"
        f = f.f_back
    return "?"


def _recording_copy(queue, dest, src, **kwargs):
    t0 = time.perf_counter()
    ev = _COPY(queue, dest, src, **kwargs)
    to_host = not isinstance(dest, cl.MemoryObjectHolder)
    if to_host and kwargs.get("is_blocking", True):
        _COPIES.append((_caller(), ev, time.perf_counter() - t0))
    return ev


def _group(pairs: list[tuple[str, float]]) -> dict[str, list[float]]:
    out: dict[str, list[float]] = collections.defaultdict(list)
    for k, v in pairs:
        out[k].append(v)
    return out


def timeline(events: list[tuple[str, cl.Event]], top: int = 12) -> list[dict]:
    """The ``top`` longest idle gaps of the device between consecutive kernels (by
    start time), with the kernels on either side."""
    rows = sorted((ev.profile.start, ev.profile.end, name, ev.profile.queued, i)
                  for i, (name, ev) in enumerate(events))
    gaps = [{"gap_ms": (b[0] - a[1]) * 1e-6, "after": a[2], "before": b[2],
             # host time between the two enqueues, and the later one's queued -> start
             "host_ms": (_HOST[b[4]] - _HOST[a[4]]) * 1e3 if len(_HOST) == len(events) else None,
             "queued_to_start_ms": (b[0] - b[3]) * 1e-6}
            for a, b in zip(rows, rows[1:])]
    return sorted(gaps, key=lambda g: -g["gap_ms"])[:top]


def host_profile(n: int, steps: int, device: str, extra: dict, top: int = 40) -> None:
    """cProfile of ``steps`` steps (no kernel hooks): where the host's time goes, the
    blocking waits included (inside pyopencl's calls)."""
    import cProfile
    import pstats
    import hybridtree
    pos, vel, mass = plummer(n, seed=1)
    sim = hybridtree.Simulation(pos, vel, mass, dt=1 / 512, eps=0.01, device=device,
                                quiet=True, diag_every=1 << 30, settings=extra)
    sim.step(2)
    _ = sim.pos
    prof = cProfile.Profile()
    prof.enable()
    sim.step(steps)
    prof.disable()
    st = pstats.Stats(prof)
    st.sort_stats("tottime").print_stats(top)
    st.sort_stats("cumulative").print_stats("hybridtree", top)


def profile(n: int, steps: int, device: str, extra: dict, sequence: str = "") -> dict:
    import hybridtree
    pos, vel, mass = plummer(n, seed=1)
    sim = hybridtree.Simulation(pos, vel, mass, dt=1 / 512, eps=0.01, device=device,
                                quiet=True, diag_every=1 << 30, settings=extra)
    sim.step(2)                                   # warm-up: kernels built, buffers grown
    _ = sim.pos
    _EVENTS.clear()
    _COPIES.clear()
    _AFTER.clear()
    _HOST.clear()
    _GC.clear()
    import gc
    gc.callbacks.append(_gc_watch)
    _SLOW.clear()
    undo = _patch_host_calls()
    cl.Kernel.__call__ = _recording_call
    cl.enqueue_copy = _recording_copy
    try:
        t0 = time.perf_counter()
        sim.step(steps)
        wall = time.perf_counter() - t0
    finally:
        cl.Kernel.__call__ = _CALL
        cl.enqueue_copy = _COPY
        gc.callbacks.remove(_gc_watch)
        for obj, attr, old in undo:
            setattr(obj, attr, old)
    reads = collections.defaultdict(lambda: [0, 0.0])
    for where, _ev, dt in _COPIES:
        reads[where][0] += 1
        reads[where][1] += dt
    per = collections.defaultdict(lambda: [0, 0.0])
    first = last = None
    for name, ev in _EVENTS:
        ev.wait()
        s, e = ev.profile.start, ev.profile.end
        per[name][0] += 1
        per[name][1] += (e - s) * 1e-9
        first = s if first is None else min(first, s)
        last = e if last is None else max(last, e)
    busy = sum(v[1] for v in per.values())
    rows = sorted(((k, c / steps, t / steps) for k, (c, t) in per.items()),
                  key=lambda r: -r[2])
    return {"n": n, "steps": steps, "wall_s": wall / steps, "kernel_s": busy / steps,
            "span_s": (last - first) * 1e-9 / steps if _EVENTS else 0.0,
            "launches": len(_EVENTS) / steps,
            "blocking_reads": [{"where": k, "per_step": c / steps, "host_s": t / steps}
                               for k, (c, t) in sorted(reads.items(), key=lambda r: -r[1][1])],
            "gaps": timeline(_EVENTS),
            "slow_host_calls": sorted(_SLOW, reverse=True)[:20],
            "after_reads": [{"where": k, "median_ms": float(np.median(v)), "count": len(v)}
                            for k, v in sorted(_group(_AFTER).items())],
            "gc": [{"generation": g, "ms": (b - a) * 1e3} for a, b, g in _GC],
            # the device time of each launch of kernel ``sequence`` in the first step
            "sequence": [(ev.profile.end - ev.profile.start) * 1e-3
                         for name, ev in _EVENTS[:len(_EVENTS) // steps] if name == sequence],
            "kernels": [{"name": k, "per_step": c, "s": t} for k, c, t in rows]}


def launch_cost(device: str, k: int = 3000) -> dict:
    """Host microseconds per enqueue of a trivial kernel (1024 items), nothing waited
    for: through ``launch``, a bound kernel object's call, and a bare enqueue."""
    from hybridtree.device.choice import get_runtime
    from hybridtree.device.kernels import kernel, launch
    rt = get_runtime(device)
    n, out = 1024, rt.empty(4 * 1024)
    knl = kernel(rt, "treebuild.cl", "iota")
    launch(rt, "treebuild.cl", "iota", n, np.int32(n), out)

    def per(fn) -> float:
        rt.queue.finish()
        t0 = time.perf_counter()
        for _ in range(k):
            fn()
        dt = (time.perf_counter() - t0) / k
        rt.queue.finish()
        return dt * 1e6

    cost = {"launch_us": per(lambda: launch(rt, "treebuild.cl", "iota", n, np.int32(n), out)),
            "kernel_call_us": per(lambda: knl(rt.queue, (n,), (64,), np.int32(n), out))}
    knl.set_args(np.int32(n), out)
    cost["enqueue_us"] = per(lambda: cl.enqueue_nd_range_kernel(rt.queue, knl, (n,), (64,)))
    plain = cl.CommandQueue(rt.context, rt.device)        # no profiling
    rt.queue.finish()
    t0 = time.perf_counter()
    for _ in range(k):
        cl.enqueue_nd_range_kernel(plain, knl, (n,), (64,))
    cost["enqueue_unprofiled_us"] = (time.perf_counter() - t0) / k * 1e6
    plain.finish()
    return cost


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--device", default="")
    p.add_argument("--n", type=int, nargs="+", default=[1 << 16])
    p.add_argument("--steps", type=int, default=4)
    p.add_argument("--set", action="append", default=[], metavar="KEY=JSON",
                   help="a setting, e.g. gravity.opening='\"geometric\"'")
    p.add_argument("--json", default=None)
    p.add_argument("--cprofile", action="store_true", help="cProfile the steps instead")
    p.add_argument("--sequence", default="", metavar="KERNEL",
                   help="print the device time of each launch of KERNEL in the first step")
    args = p.parse_args()
    extra = {k: json.loads(v) for k, v in (s.split("=", 1) for s in args.set)}
    if args.cprofile:
        for n in args.n:
            host_profile(n, args.steps, args.device, extra)
        return
    cost = launch_cost(args.device)
    print("host us per launch: " + ", ".join(f"{k} {v:.1f}" for k, v in cost.items()))
    out = [cost]
    for n in args.n:
        r = profile(n, args.steps, args.device, extra, args.sequence)
        out.append(r)
        print(f"N = {n}: wall {1e3 * r['wall_s']:.2f} ms/step, kernels {1e3 * r['kernel_s']:.2f}"
              f" ms, first start → last end {1e3 * r['span_s']:.2f} ms, "
              f"{r['launches']:.0f} launches/step", flush=True)
        for k in r["kernels"]:
            print(f"  {k['name']:28s} {k['per_step']:7.1f}x {1e3 * k['s']:8.3f} ms")
        if args.sequence:
            print(f"  {args.sequence} launches of the first step (us): "
                  + " ".join(f"{us:.1f}" for us in r["sequence"]))
        print("  blocking reads (host wait per step):")
        for b in r["blocking_reads"]:
            print(f"    {b['where']:40s} {b['per_step']:5.2f}x {1e3 * b['host_s']:8.3f} ms")
        print(f"  longest device gaps over the {args.steps} steps:")
        for g in r["gaps"]:
            print(f"    {g['gap_ms']:7.3f} ms  {g['after']} -> {g['before']}  (host between "
                  f"the enqueues {g['host_ms']:.3f} ms, queued -> start "
                  f"{g['queued_to_start_ms']:.3f} ms)")
        print("  host time from a read's return to the next launch (median ms):")
        for a in r["after_reads"]:
            print(f"    {a['median_ms']:7.3f}  {a['where']} ({a['count']}x)")
        print("  slowest host calls (ms):")
        for ms, what in r["slow_host_calls"]:
            print(f"    {ms:8.3f}  {what}")
        gcs = r["gc"]
        print(f"  garbage collections: {len(gcs)}, {sum(g['ms'] for g in gcs):.2f} ms in all, "
              f"longest {max([g['ms'] for g in gcs] or [0]):.2f} ms (generations "
              f"{sorted(set(g['generation'] for g in gcs))})")
    if args.json:
        with open(args.json, "w") as f:
            json.dump(out, f, indent=1)


if __name__ == "__main__":
    main()
