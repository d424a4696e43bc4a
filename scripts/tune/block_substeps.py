#!/usr/bin/env python
"""What one block-step substep does, stage by stage (a tuning aid, not a test; issue 57).

    PYTHONPATH=. python scripts/tune/block_substeps.py --device cpu --n 262144
    PYTHONPATH=. python scripts/tune/block_substeps.py --device nvidia --n 4194304 --json out.json

The M31 model of configs/galaxy_m31.toml (block steps, its eps, dt and max_bin) is stepped
``--warm`` largest steps untimed, then ``--steps`` more with every kernel launch, buffer
copy/fill and host wait recorded and charged to the stage that made it: the wrapped
methods ``drift`` (DeviceState.drift), ``tree`` (the refit or build), ``sinks`` (the
active walk's flags, scan, packing, groups and floors), ``walk`` (the list walk and its
unsort), ``tally`` (the interaction counts summed on the device, and read back), ``kick``,
``assign``, ``counts`` (particles per bin, read back).  Per substep kind (its lowest active
bin, as :class:`hybridtree.integrate.schemes.BinStats` charges them) and stage: launches,
work-items launched (O(N) where ~N), device ms (profiling events, start -> end), host
waits, and the host's ms spent in the stage (enqueueing and waiting).
"""

from __future__ import annotations

import argparse
import collections
import json
import time
from contextlib import contextmanager

import numpy as np
import pyopencl as cl

from hybridtree import Simulation
from hybridtree.config import load_config, parse_overrides
from hybridtree.device import transfer
from hybridtree.gravity import backends, counts as counts_module
from hybridtree.ics.galaxy import galaxy, m31
from hybridtree.integrate import schemes, timebins
from hybridtree.state.device import DeviceState

from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
_STAGE = ["other"]
_REC: list[tuple] = []          # (substep, stage, what, name, items, event)
_WAITS: list[tuple] = []        # (substep, stage)
_HOSTMS = collections.defaultdict(float)   # (substep, stage) -> host seconds
_SUB = [-1]
_CALL, _COPY, _FILL, _WAIT = (cl.Kernel.__call__, cl.enqueue_copy, cl.enqueue_fill_buffer,
                              transfer.wait_for)
SINKS = {"active_flags", "pack_active", "active_windows", "pack_windows", "group_floor",
         "group_floor4", "scan_blocks", "scan_add", "scan_local", "scan_tops"}


@contextmanager
def stage(name: str):
    prev = _STAGE[0]
    _STAGE[0] = name
    t0 = time.perf_counter()
    try:
        yield
    finally:
        _HOSTMS[(_SUB[0], "sinks+walk" if name == "walk_active" else name)] += \
            time.perf_counter() - t0
        _STAGE[0] = prev


def _call(self, queue, global_size, *args, **kwargs):
    ev = _CALL(self, queue, global_size, *args, **kwargs)
    where = _STAGE[0]
    if where == "walk_active":
        where = "sinks" if self.function_name in SINKS or "scan" in self.function_name \
            else "walk"
    _REC.append((_SUB[0], where, "kernel", self.function_name,
                 int(np.prod(global_size)), ev))
    return ev


def _copy(queue, dest, src, **kw):
    ev = _COPY(queue, dest, src, **kw)
    _REC.append((_SUB[0], _STAGE[0] if _STAGE[0] != "walk_active" else "sinks", "copy",
                 "copy", 0, ev))
    if not isinstance(dest, cl.MemoryObjectHolder) and kw.get("is_blocking", True):
        _WAITS.append((_SUB[0], _STAGE[0]))
    return ev


def _fill(queue, buf, *a, **kw):
    ev = _FILL(queue, buf, *a, **kw)
    _REC.append((_SUB[0], _STAGE[0] if _STAGE[0] != "walk_active" else "sinks", "fill",
                 "fill", 0, ev))
    return ev


def _wait(event):
    _WAITS.append((_SUB[0], _STAGE[0] if _STAGE[0] != "walk_active" else "sinks"))
    return _WAIT(event)


def wrap(obj, attr: str, name: str, undo: list):
    old = getattr(obj, attr)
    undo.append((obj, attr, old))

    def wrapper(*a, **kw):
        with stage(name):
            return old(*a, **kw)
    setattr(obj, attr, wrapper)


def patch() -> list:
    undo: list = []
    wrap(DeviceState, "drift", "drift", undo)
    wrap(backends.DeviceBackend, "build", "tree", undo)
    wrap(backends, "walk_active", "walk_active", undo)
    wrap(counts_module.Tally, "add_device", "tally", undo)
    wrap(counts_module.Tally, "read", "tally", undo)
    wrap(timebins.DeviceBins, "kick", "kick", undo)
    wrap(timebins.DeviceBins, "assign", "assign", undo)
    wrap(timebins.DeviceBins, "counts", "counts", undo)
    if hasattr(timebins.DeviceBins, "close_open"):      # the fused end of a substep
        wrap(timebins.DeviceBins, "close_open", "close", undo)
    undo += [(cl.Kernel, "__call__", _CALL), (cl, "enqueue_copy", _COPY),
             (cl, "enqueue_fill_buffer", _FILL), (transfer, "wait_for", _WAIT)]
    cl.Kernel.__call__ = _call
    cl.enqueue_copy = _copy
    cl.enqueue_fill_buffer = _fill
    transfer.wait_for = _wait
    return undo


def m31_options(doc: str) -> argparse.ArgumentParser:
    """The options of a block run of M31 (:func:`m31_block_run`): --device, --n, --seed,
    --set, --json."""
    p = argparse.ArgumentParser(description=doc.split("\n\n")[0])
    p.add_argument("--device", default=None)
    p.add_argument("--n", type=int, default=1 << 18)
    p.add_argument("--seed", type=int, default=2)
    p.add_argument("--set", action="append", default=[], metavar="KEY=VALUE")
    p.add_argument("--json")
    return p


def m31_block_run(args, eta: float | None = None) -> Simulation:
    """The M31 model of configs/galaxy_m31.toml (``args.n`` particles, ``args.seed``) with
    block steps at its eps, dt and max_bin and ``eta`` (default the config's), no reports
    (``output.diag_every`` never), ``args.set`` over these, on ``args.device``."""
    cfg = load_config(ROOT / "configs" / "galaxy_m31.toml")
    settings = {"gravity.eps": cfg.gravity.eps, "time.dt": cfg.time.dt,
                "time.stepping": "block", "time.eta": cfg.time.eta if eta is None else eta,
                "time.max_bin": cfg.time.max_bin, "output.diag_every": 1 << 30}
    if args.device:
        settings["gravity.device"] = args.device
    settings.update(parse_overrides(args.set))
    pos, vel, mass, ids, types = galaxy(m31(args.n), seed=args.seed)
    return Simulation(pos, vel, mass, ids, types=types, quiet=True, settings=settings)


def main() -> None:
    p = m31_options(__doc__)
    p.add_argument("--warm", type=int, default=1)
    p.add_argument("--steps", type=int, default=1)
    p.add_argument("--kernels", type=int, default=0, metavar="K",
                   help="also the K costliest kernels of each substep kind by device time")
    args = p.parse_args()
    sim = m31_block_run(args)
    sim.step(args.warm)
    sim._rt.queue.finish()
    scheme = sim._stepper.scheme
    # a substep: each pass of BlockLeapfrog.step's loop starts with a drift; the kind of
    # the substep (its lowest active bin) is known after the force, from the active count
    kinds: list[int] = []
    walls: list[float] = []
    old_lowest = schemes.lowest_active
    t_sub = [0.0]

    def lowest(ti, deep):
        k = old_lowest(ti, deep)
        now = time.perf_counter()
        if _SUB[0] >= 0:
            walls.append(now - t_sub[0])
        _SUB[0] += 1
        t_sub[0] = now
        kinds.append(k)
        return k
    schemes.lowest_active = lowest
    undo = patch()
    try:
        t0 = time.perf_counter()
        sim.step(args.steps)
        sim._rt.queue.finish()
        wall = time.perf_counter() - t0
        walls.append(time.perf_counter() - t_sub[0])
    finally:
        schemes.lowest_active = old_lowest
        for obj, attr, old in undo:
            setattr(obj, attr, old)
    bins = sim.timebins()
    sim.close()
    # the drift of a substep comes before lowest_active: charge it to the next substep
    per = collections.defaultdict(lambda: [0, 0, 0.0, 0, 0.0])   # launches, items, dev, waits, host
    named = collections.defaultdict(lambda: [0, 0.0])     # (kind, stage, name) -> launches, dev
    subs_of_kind = collections.Counter(kinds)
    for sub, where, what, name, items, ev in _REC:
        if where == "drift":
            sub += 1
        if sub < 0 or sub >= len(kinds):
            continue
        ev.wait()
        r = per[(kinds[sub], where)]
        r[0] += 1
        r[1] += items
        r[2] += (ev.profile.end - ev.profile.start) * 1e-9
        c = named[(kinds[sub], where, name)]
        c[0] += 1
        c[1] += (ev.profile.end - ev.profile.start) * 1e-9
    for sub, where in _WAITS:
        if 0 <= sub < len(kinds):
            per[(kinds[sub], where)][3] += 1
    for (sub, where), sec in _HOSTMS.items():
        if where == "drift":
            sub += 1
        if 0 <= sub < len(kinds):
            per[(kinds[sub], where)][4] += sec
    wall_of_kind = collections.defaultdict(float)
    for k, w in zip(kinds, walls):
        wall_of_kind[k] += w
    out = {"n": args.n, "wall_s": wall, "substeps": len(kinds),
           "bins": [{k: b[k] for k in ("bin", "particles", "substeps")} for b in bins],
           "kinds": {}}
    occupied = {b["bin"]: b["particles"] for b in bins}
    print(f"# N = {args.n}, {len(kinds)} substeps in {args.steps} step(s), wall {wall:.3f} s")
    print("# bins: " + " ".join(f"{b['bin']}:{b['particles']}" for b in bins))
    order = ["drift", "tree", "sinks", "walk", "sinks+walk", "tally", "kick", "assign", "counts", "close",
             "other"]
    for k in sorted(subs_of_kind):
        m = subs_of_kind[k]
        active = sum(v for b, v in occupied.items() if b >= k)
        rows = {}
        print(f"\n## substeps of lowest active bin {k}: {m}, ~{active} active "
              f"({active / args.n:.1%}), wall {1e3 * wall_of_kind[k] / m:.2f} ms each")
        print(f"{'stage':8s} {'launches':>8s} {'items/N':>8s} {'dev ms':>8s} {'waits':>6s} "
              f"{'host ms':>8s}")
        for where in order:
            r = per.get((k, where))
            if r is None:
                continue
            rows[where] = {"launches": r[0] / m, "items_per_n": r[1] / m / args.n,
                           "device_ms": 1e3 * r[2] / m, "waits": r[3] / m,
                           "host_ms": 1e3 * r[4] / m}
            x = rows[where]
            print(f"{where:8s} {x['launches']:8.1f} {x['items_per_n']:8.2f} "
                  f"{x['device_ms']:8.2f} {x['waits']:6.1f} {x['host_ms']:8.2f}")
        out["kinds"][k] = {"substeps": m, "active": active,
                           "wall_ms": 1e3 * wall_of_kind[k] / m, "stages": rows}
        if args.kernels:
            top = sorted(((v[1], key[1], key[2], v[0]) for key, v in named.items()
                          if key[0] == k), reverse=True)[:args.kernels]
            print(f"{'stage':8s} {'kernel':24s} {'launches':>8s} {'dev ms':>8s}")
            for dev, where, name, n_l in top:
                print(f"{where:8s} {name:24s} {n_l / m:8.1f} {1e3 * dev / m:8.3f}")
            out["kinds"][k]["kernels"] = [{"stage": w, "name": nm, "launches": n_l / m,
                                           "device_ms": 1e3 * d / m} for d, w, nm, n_l in top]
    if args.json:
        Path(args.json).write_text(json.dumps(out) + "\n")


if __name__ == "__main__":
    main()
