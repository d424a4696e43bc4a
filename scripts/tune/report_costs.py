#!/usr/bin/env python
"""What one diagnostics report costs, part by part (a tuning aid, not a test; issue 57).

    PYTHONPATH=. python scripts/tune/report_costs.py --device nvidia --n 4194304 --json out.json

The M31 model of configs/galaxy_m31.toml (its types: a report sums and ranks each type's
particles) is stepped once; then ``--reports`` reports are made by the run's own
:meth:`hybridtree.run.output.Output.report` path, timed whole by the caller's clock, and
again part by part: the whole set's moments (``moments``), the types' sums and every
Lagrangian radius (``report_sums``) and the rest (writing nothing: quiet, no folder).  Per
part: host ms, kernel launches, their device ms (profiling events) and host waits; and
the costliest kernels by device time.
"""

from __future__ import annotations

import collections
import json
import time
from pathlib import Path

import pyopencl as cl

from block_substeps import m31_block_run, m31_options      # this folder's
from hybridtree.device import transfer
_CALL, _COPY, _WAIT = cl.Kernel.__call__, cl.enqueue_copy, transfer.wait_for
_PART = ["other"]
_REC: list[tuple] = []          # (part, name, event)
_WAITS = collections.Counter()


def _call(self, *a, **kw):
    ev = _CALL(self, *a, **kw)
    _REC.append((_PART[0], self.function_name, ev))
    return ev


def _copy(queue, dest, src, **kw):
    ev = _COPY(queue, dest, src, **kw)
    if not isinstance(dest, cl.MemoryObjectHolder) and kw.get("is_blocking", True):
        _WAITS[_PART[0]] += 1
    return ev


def _wait(event):
    _WAITS[_PART[0]] += 1
    return _WAIT(event)


def main() -> None:
    p = m31_options(__doc__)
    p.add_argument("--reports", type=int, default=10)
    p.add_argument("--top", type=int, default=12)
    args = p.parse_args()
    sim = m31_block_run(args, eta=0.8)
    sim.step(1)
    out, st, q = sim._output, sim._stepper, sim._rt.queue
    q.finish()
    out.report(sim.steps)           # warm: kernels built
    q.finish()
    whole = []
    for _ in range(args.reports):
        t0 = time.perf_counter()
        out.report(sim.steps)
        q.finish()
        whole.append(time.perf_counter() - t0)
    cl.Kernel.__call__, cl.enqueue_copy, transfer.wait_for = _call, _copy, _wait
    host = collections.defaultdict(float)
    try:
        for _ in range(args.reports):
            for part in ("moments", "report_sums"):
                _PART[0] = part
                t0 = time.perf_counter()
                mom = out.moments() if part == "moments" else None
                if part == "report_sums":
                    st.report_sums(out.types, out.type_totals, (mom_keep["com"], mom_keep["mass"]))
                else:
                    mom_keep = mom
                q.finish()
                host[part] += time.perf_counter() - t0
    finally:
        cl.Kernel.__call__, cl.enqueue_copy, transfer.wait_for = _CALL, _COPY, _WAIT
    sim.close()
    per = collections.defaultdict(lambda: [0, 0.0])
    named = collections.defaultdict(lambda: [0, 0.0])
    for part, name, ev in _REC:
        ev.wait()
        dt = (ev.profile.end - ev.profile.start) * 1e-9
        per[part][0] += 1
        per[part][1] += dt
        named[(part, name)][0] += 1
        named[(part, name)][1] += dt
    m = args.reports
    res = {"n": args.n, "types": list(out.types), "report_ms": [1e3 * w for w in whole],
           "parts": {}, "kernels": []}
    print(f"# N = {args.n}, types {list(out.types)}: a whole report "
          f"{1e3 * min(whole):.2f} ms (min of {m}), median {1e3 * sorted(whole)[m // 2]:.2f} ms")
    print(f"{'part':12s} {'host ms':>8s} {'launches':>8s} {'dev ms':>8s} {'waits':>6s}")
    for part in ("moments", "report_sums"):
        r = {"host_ms": 1e3 * host[part] / m, "launches": per[part][0] / m,
             "device_ms": 1e3 * per[part][1] / m, "waits": _WAITS[part] / m}
        res["parts"][part] = r
        print(f"{part:12s} {r['host_ms']:8.2f} {r['launches']:8.1f} {r['device_ms']:8.2f} "
              f"{r['waits']:6.1f}")
    top = sorted(((v[1], k[0], k[1], v[0]) for k, v in named.items()), reverse=True)[:args.top]
    print(f"{'part':12s} {'kernel':28s} {'launches':>8s} {'dev ms':>8s}")
    for dev, part, name, n_l in top:
        print(f"{part:12s} {name:28s} {n_l / m:8.1f} {1e3 * dev / m:8.3f}")
        res["kernels"].append({"part": part, "name": name, "launches": n_l / m,
                               "device_ms": 1e3 * dev / m})
    if args.json:
        Path(args.json).write_text(json.dumps(res) + "\n")


if __name__ == "__main__":
    main()
