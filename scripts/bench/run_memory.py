#!/usr/bin/env python
"""Device memory of a whole run against N, told by the run's own ledger
(hybridtree.device.memory) beside what the device says (a benchmark, not a test).

    PYTHONPATH=. python scripts/bench/run_memory.py --device nvidia --n 4194304 16777216

Each N runs in its own process: a Plummer sphere (Hénon units, eps = 0.01, dt = 1/128)
through ``hybridtree.Simulation`` with every other setting at its default, ``--steps``
steps; meanwhile this process samples ``nvidia-smi``'s used memory every 50 ms.  A first
child with 4096 particles measures what the OpenCL context and the kernels' programs
take on the device (the part no ledger sees).  A row gives the ledger's peak by owner, the
device's peak over its idle value, the plan's prediction (hybridtree.run.plan, context
included), and bytes per particle.  On a CPU
device the child's resident high-water mark stands in for the device's figure.
"""

from __future__ import annotations

import argparse
import json
import time

from common import Sampler, add_device, plummer, run_child, write_json


def one(n: int, device: str | None, steps: int) -> dict:
    """A run of ``n`` particles: the ledger's report, seconds per step (caller's clock)."""
    import hybridtree
    pos, vel, mass = plummer(n)
    t0 = time.perf_counter()
    opts = {"device": device} if device else {}
    sim = hybridtree.Simulation(pos, vel, mass, dt=1 / 128, eps=0.01, quiet=True, **opts)
    del pos, vel, mass
    setup = time.perf_counter() - t0
    sim.evolve(1 / 128)                    # the first step builds what later ones reuse
    t1 = time.perf_counter()
    sim.evolve((1 + steps) / 128)
    step_s = (time.perf_counter() - t1) / steps
    rep = sim._rt.memory.report()
    from hybridtree.run.plan import device_plan
    plan = device_plan(sim.settings, sim._rt.info, n)
    from hybridtree.run.size import status_bytes
    hwm = status_bytes("VmHWM")
    return {"n": n, "setup_s": setup, "step_s": step_s, "ledger": rep, "hwm": hwm,
            "plan": {"owners": plan.owners, "buffers": plan.buffers, "total": plan.total,
                     "context": plan.context},
            "kind": sim._rt.info.kind, "energy_error": float(sim.energy_error)}


def main(argv: list[str] | None = None) -> None:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    add_device(p)
    p.add_argument("--n", type=int, nargs="+", default=[1 << 16])
    p.add_argument("--steps", type=int, default=4)
    p.add_argument("--timeout", type=float, default=600, help="seconds per N")
    p.add_argument("--one", type=int, help=argparse.SUPPRESS)
    p.add_argument("--json", metavar="PATH")
    args = p.parse_args(argv)
    if args.one:
        print(json.dumps(one(args.one, args.device, args.steps)), flush=True)
        return
    idle = Sampler.used()
    print(f"# device {args.device}  idle {idle} MiB used", flush=True)
    rows = []
    for n in [4096] + args.n:
        row = run_child(__file__, n, ["--steps", str(args.steps)], args.device,
                        args.timeout, idle, tail=2000)
        rows.append(row)
        if "failed" in row:
            continue
        led = row["ledger"]["peak"] / 2**20
        dev = row["device_peak_mib"]
        owners = ", ".join(f"{k} {v / 2**20:.0f}" for k, v in row["ledger"]["at_peak"].items())
        plan = row["plan"]["total"] / 2**20
        print(f"N {n:>11}  step {row['step_s']:.4f} s  ledger {led:9.1f} MiB "
              f"({row['ledger']['peak'] / n:6.1f} B/p)  device {dev} MiB  plan {plan:9.1f} MiB  "
              f"hwm {row['hwm'] / 2**20:.0f} MiB  [{owners}]", flush=True)
    write_json(args.json, {"idle_mib": idle, "rows": rows})


if __name__ == "__main__":
    main()
