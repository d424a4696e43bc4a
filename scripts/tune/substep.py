"""A block-step substep (forces of a random fraction of the particles) with a refit of
the last tree against a build (a tuning aid, not a test; Plummer, θ = 0.5 monopole).

    PYTHONPATH=. python scripts/tune/substep.py N ACTIVE_FRACTION [REPEATS]
        [--replicate R ...] [--merge W,CAP,GROW ...] [--active-options K=V,...]
        [--alpha A] [--n-group G] [--profile]

Each variant starts from the first list room (the runtime's list room forgotten:
list_walk.list_room) and prints the room its walks left (a long list makes every later
list walk's room large).
``--replicate``: the active walk's copies of a small group's sinks
(WalkTuning's active_copies of the device's kind) to try, one run each (default: the
device's own).
``--merge``: the active walk's merging of sparse consecutive groups
(active_merge: window, cap, grow; 1,0,1 merges none) to try, one run each after the
copies' runs (default: the device's own).  Each variant's engine gets its WalkTuning.
``--active-options``: kernel options of the active walks only (e.g. KERNEL=tree_walk),
over the engine's, for every run.
``--alpha``: the relative opening criterion with that alpha instead of θ = 0.5.
``--profile``: each kernel's device time per substep
(profiling events, summed by name) and the blocking reads per substep, by the caller's
line (scripts/tune/kernels.py's hooks).
"""
import argparse
import collections
import os
import sys
import time

import numpy as np
import pyopencl as cl

from hybridtree.device.choice import get_runtime
from hybridtree.device.clock import Clock
from hybridtree.gravity import backends as backend_module
from hybridtree.gravity import list_walk
from hybridtree.gravity.engine import ForceEngine, GravitySettings
from hybridtree.gravity.tuning import TUNING
from hybridtree.state import make_state
from hybridtree.ics import plummer
from hybridtree.particles import Particles

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import kernels as hooks  # noqa: E402  (the kernel and blocking-read recorders)

ap = argparse.ArgumentParser()
ap.add_argument("n", type=int)
ap.add_argument("frac", type=float)
ap.add_argument("reps", type=int, nargs="?", default=5)
ap.add_argument("--replicate", type=int, nargs="*", default=[None])
ap.add_argument("--merge", nargs="*", default=[None])
ap.add_argument("--active-options", default="")
ap.add_argument("--alpha", type=float)
ap.add_argument("--n-group", type=int, default=0, help="sinks per group (0: the device's)")
ap.add_argument("--profile", action="store_true")
args = ap.parse_args()
n, frac, reps = args.n, args.frac, args.reps
rt = get_runtime()
pos, vel, mass = plummer(n, seed=1)
bins_host = np.zeros(n, np.int32)
bins_host[np.random.default_rng(0).random(n) < frac] = 1      # active: bin >= 1
extra = {k: (int(v) if v.lstrip("-").isdigit() else v)
         for k, v in (kv.split("=") for kv in args.active_options.split(",") if kv)}
_walk_active = backend_module.walk_active
walked: list[float] = []          # each active walk's groups over the whole walk's


def walk_active(*a, **kw):
    """The device backend's walk_active with --active-options, recording the groups
    walked (against the whole walk's groups: the groups of the tree's own split)."""
    a = list(a)
    a[9] = {**(a[9] or {}), **extra} or None      # options, after n_group and floor
    out = _walk_active(*a, **kw)
    whole = max((g.n_groups for g in a[1].groups.values()), default=1)
    walked.append(out[2] / whole)
    return out


backend_module.walk_active = walk_active


def substeps(eng, s, bins) -> list[float]:
    times = []
    for r in range(reps + 1):
        s.drift(1e-4)
        rt.queue.finish()
        t0 = time.perf_counter()
        eng.compute(s, ("full",), active=(bins, 1))
        rt.queue.finish()
        if r:
            times.append(time.perf_counter() - t0)
    return times


def profiled(eng, s, bins) -> None:
    """Kernel device time and blocking reads per substep (``reps`` substeps)."""
    hooks._EVENTS.clear()
    hooks._COPIES.clear()
    undo = hooks._patch_host_calls()
    cl.Kernel.__call__ = hooks._recording_call
    cl.enqueue_copy = hooks._recording_copy
    try:
        for _ in range(reps):
            s.drift(1e-4)
            eng.compute(s, ("full",), active=(bins, 1))
        rt.queue.finish()
    finally:
        cl.Kernel.__call__ = hooks._CALL
        cl.enqueue_copy = hooks._COPY
        for obj, attr, old in undo:
            setattr(obj, attr, old)
    per = collections.defaultdict(lambda: [0, 0.0])
    for name, ev in hooks._EVENTS:
        ev.wait()
        per[name][0] += 1
        per[name][1] += (ev.profile.end - ev.profile.start) * 1e-9
    busy = sum(v[1] for v in per.values())
    print(f"  profile: kernels {1e3 * busy / reps:.2f} ms per substep, "
          f"{len(hooks._EVENTS) / reps:.0f} launches", flush=True)
    for name, (c, t) in sorted(per.items(), key=lambda kv: -kv[1][1])[:16]:
        print(f"    {name:28s} {c / reps:5.1f}x {1e3 * t / reps:8.3f} ms")
    reads = collections.defaultdict(lambda: [0, 0.0])
    for where, _ev, dt in hooks._COPIES:
        reads[where][0] += 1
        reads[where][1] += dt
    for where, (c, t) in sorted(reads.items(), key=lambda kv: -kv[1][1]):
        print(f"    read {where:40s} {c / reps:4.1f}x {1e3 * t / reps:8.3f} ms")


def parse_merge(text: str | None) -> tuple[int, int, float] | None:
    if text is None:
        return None
    w, cap, grow = text.split(",")
    return int(w), int(cap), float(grow)


variants = [(rep, None) for rep in args.replicate] + \
    [(None, parse_merge(m)) for m in args.merge if m is not None]
for rep, merge in variants:
    changes = {} if rep is None else {"active_copies": rep}
    if merge is not None:
        changes["active_merge"] = merge
    tuning = TUNING.for_kind(rt.info.kind, **changes)
    label = ("" if rep is None else f" copies={rep}") + \
        ("" if merge is None else " merge={},{},{}".format(*merge))
    for f in (0.0, 1e9):   # 0: build every substep; huge: always refit
        list_walk.list_room(rt).room = None
        crit = {"theta": 0.5} if args.alpha is None else {"opening": "relative",
                                                          "alpha": args.alpha}
        g = GravitySettings(eps=0.01, refit_fraction=min(f, 100), n_group=args.n_group, **crit)
        clock = Clock(rt)
        eng = ForceEngine(g, rt, clock, tuning=tuning)
        s = make_state(Particles(pos, vel, mass, np.arange(1, n + 1, dtype=np.uint64)),
                       ("full",), "device", rt, clock)
        bins = rt.to_device(bins_host)
        eng.compute(s, ("full",))                 # a full force: builds
        walked.clear()
        times = substeps(eng, s, bins)
        full = []
        for r in range(2):
            rt.queue.finish()
            t0 = time.perf_counter()
            eng.compute(s, ("full",))
            rt.queue.finish()
            full.append(time.perf_counter() - t0)
        snap = clock.snapshot()
        room = list_walk.list_room(rt).room or tuning.list_start
        crit_label = ("" if args.alpha is None else f" alpha={args.alpha}") + \
            (f" n_group={args.n_group}" if args.n_group else "")
        print(f"N={n} active={frac:.3f}{label}{crit_label} {'refit' if f else 'build'}: substep "
              f"{1e3 * np.median(times):.1f} ms (full force {1e3 * min(full):.1f} ms) room "
              f"{room} groups walked {np.median(walked):.3f} counts {dict(eng.counts)} "
              f"build/refit s "
              f"{snap.get('build', 0):.3f}/{snap.get('refit', 0):.3f}", flush=True)
        if args.profile:
            eng.compute(s, ("full",))             # the next substeps refit this build
            profiled(eng, s, bins)
