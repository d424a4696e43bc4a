#!/usr/bin/env python
"""The largest runs of one device (issue 56): a Plummer sphere drawn by the run itself
(a config's ``ics.kind = "plummer"``, block by block as ``hybridtree run`` draws it),
stepped ``--steps`` steps, with the device memory by owner, the plan's prediction, the
step time by the caller's clock and the force error on sampled sinks at the end
(a benchmark, not a test).

    PYTHONPATH=. python scripts/bench/billion.py --device nvidia --n 1073741824 --steps 8 --sample 1000

Each N runs in its own process (``--one``) while this one samples ``nvidia-smi``'s used
memory every 50 ms.  The child:

1. ``Simulation.from_settings`` of Plummer, Hénon units, eps 0.01, dt 1/128, every other
   setting at its default (the set-up timed by the caller's clock);
2. one step (builds what the later ones reuse), then ``--steps`` steps, timed together;
3. the ledger's peak by owner and the plan (``hybridtree.run.plan.device_plan``);
4. the accelerations of ``--sample`` sinks (``common.sample_indices``) as the run holds
   them after its last step, and every particle's position and mass, copied to the host
   chunk by chunk into files in ``--scratch`` (/dev/shm: 32 bytes a particle).
Then, the child gone and its device memory with it, this process computes the float64
direct sums on those sinks: with torch on a CUDA device where there is one (float64
throughout), else with numpy on the host (slow above 2^22).  The run's own
   accelerations have the net force removed (``gravity.remove_net_force``): the
   reference gets the same (the mass-weighted mean over all particles of the direct
   sums is zero by Newton's third law, so nothing is subtracted from it).

Units: seconds, bytes (MiB where said), Hénon units.
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import tempfile
import time

import numpy as np

from common import Sampler, add_device, rel_errors, run_child, sample_indices, write_json

EPS = 0.01
CHUNK = 1 << 24


def reference(pos: np.ndarray, mass: np.ndarray, idx: np.ndarray, eps: float) -> np.ndarray:
    """float64 direct-sum accelerations (G = 1, Plummer softening) on ``pos[idx]`` from
    every particle (the sink itself adds nothing: zero separation)."""
    try:
        import torch
        cuda = torch.cuda.is_available()
    except ImportError:
        cuda = False
    if not cuda:
        from hybridtree.gravity import direct_reference
        return direct_reference(pos, mass, eps, sinks=pos[idx])[0]
    dev = torch.device("cuda")
    sinks = torch.from_numpy(pos[idx]).to(dev)
    acc = torch.zeros_like(sinks)
    step = max(1, (1 << 29) // (8 * len(idx)))        # 512 MiB of each temporary
    for lo in range(0, len(pos), step):
        src = torch.from_numpy(np.array(pos[lo:lo + step])).to(dev)
        m = torch.from_numpy(np.array(mass[lo:lo + step])).to(dev)
        d = src[None, :, :] - sinks[:, None, :]             # (k, s, 3)
        r2 = (d * d).sum(-1) + eps * eps
        w = m[None, :] * r2 ** -1.5
        acc += (w[:, :, None] * d).sum(1)
        del src, m, d, r2, w
    out = acc.cpu().numpy()
    del sinks, acc
    torch.cuda.empty_cache()        # the next N's device peak is not to see torch's cache
    return out


def roomiest(paths: list[str]) -> str:
    """Of ``paths`` (folders that exist), the one on the file system with the most room."""
    return max((p for p in paths if os.path.isdir(p)), key=lambda p: shutil.disk_usage(p).free)


def one(n: int, device: str | None, steps: int, sample: int, seed: int, scratch: str,
        sets: list[str] = ()) -> dict:
    """One run of ``n`` particles (see the module's docstring); ``sets``: settings
    ``section.name=value`` as ``hybridtree run --set`` takes them."""
    import hybridtree
    from hybridtree.config.settings import parse_overrides, validate
    from hybridtree.run.plan import device_plan
    raw = {"ics": {"kind": "plummer", "n": n, "seed": seed},
           "gravity": {"eps": EPS}, "time": {"dt": 1 / 128, "t_end": (2 + steps) / 128}}
    if device:
        raw["gravity"]["device"] = device
    settings = validate(raw)
    if sets:
        settings = settings.with_overrides(parse_overrides(list(sets)))
    t0 = time.perf_counter()
    sim = hybridtree.Simulation.from_settings(settings, quiet=True)
    setup = time.perf_counter() - t0
    sim.step(1)
    t1 = time.perf_counter()
    sim.step(steps)
    step_s = (time.perf_counter() - t1) / steps
    rep = sim._rt.memory.report()
    plan = device_plan(sim.settings, sim._rt.info, n)
    row = {"n": n, "sets": list(sets), "setup_s": setup, "step_s": step_s, "particles_per_s": n / step_s,
           "ledger": rep, "kind": sim._rt.info.kind, "device_name": sim._rt.info.name,
           "plan": {"owners": plan.owners, "buffers": plan.buffers, "total": plan.total,
                    "context": plan.context},
           "energy_error": float(sim.energy_error)}
    if sample:
        t2 = time.perf_counter()
        idx = np.sort(sample_indices(n, sample))
        pos = np.lib.format.open_memmap(f"{scratch}/pos.npy", "w+", np.float64, (n, 3))
        mass = np.lib.format.open_memmap(f"{scratch}/mass.npy", "w+", np.float64, (n,))
        acc = np.empty((len(idx), 3))
        state = sim._stepper.state
        for lo in range(0, n, CHUNK):
            hi = min(n, lo + CHUNK)
            p = state.download_rows(lo, hi)
            pos[lo:hi], mass[lo:hi] = p.pos, p.mass
            mine = (idx >= lo) & (idx < hi)
            acc[mine] = p.acc[idx[mine] - lo]
            del p
        pos.flush()
        mass.flush()
        np.save(f"{scratch}/idx.npy", idx)
        np.save(f"{scratch}/acc.npy", acc)
        row["download_s"] = time.perf_counter() - t2
    sim.close()
    from hybridtree.run.size import status_bytes
    hwm = status_bytes("VmHWM")
    row["host_hwm"] = hwm
    return row


def main(argv: list[str] | None = None) -> None:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    add_device(p)
    p.add_argument("--n", type=int, nargs="+", default=[1 << 16])
    p.add_argument("--steps", type=int, default=8)
    p.add_argument("--sample", type=int, default=1000, help="sinks for the force error (0: none)")
    p.add_argument("--seed", type=int, default=1)
    p.add_argument("--timeout", type=float, default=560, help="seconds per N")
    p.add_argument("--scratch", default=None, help="where the sampled run's positions wait "
                   "for the reference, 32 bytes a particle (default: the roomiest of "
                   "/dev/shm, the temporary folder and this folder)")
    p.add_argument("--set", dest="sets", action="append", default=[], metavar="KEY=VALUE",
                   help="a setting as `hybridtree run --set` takes it (e.g. "
                   "memory.velocities=float32); repeatable")
    p.add_argument("--one", type=int, help=argparse.SUPPRESS)
    p.add_argument("--json", metavar="PATH")
    args = p.parse_args(argv)
    if args.one:
        print(json.dumps(one(args.one, args.device, args.steps, args.sample, args.seed,
                             args.scratch, args.sets)), flush=True)
        return
    args.scratch = args.scratch or roomiest(["/dev/shm", tempfile.gettempdir(), os.getcwd()])
    rows = []
    for n in args.n:
        idle = Sampler.used()           # each N's own: what an earlier one left is not its
        print(f"# device {args.device}  idle {idle} MiB used  scratch {args.scratch} "
              f"({shutil.disk_usage(args.scratch).free / 2**30:.0f} GiB free)", flush=True)
        scratch = tempfile.mkdtemp(dir=args.scratch)
        row = run_child(__file__, n, ["--steps", str(args.steps), "--sample", str(args.sample),
                                      "--seed", str(args.seed), "--scratch", scratch]
                        + [f"--set={x}" for x in args.sets],
                        args.device, args.timeout, idle)
        if "failed" in row:
            rows.append(row)
            continue
        row["idle_mib"] = idle
        print("# run: " + json.dumps({k: row[k] for k in ("n", "setup_s", "step_s",
                                                           "device_peak_mib", "host_hwm")}),
              flush=True)
        write_json(args.json, {"rows": rows + [row]})    # kept should the reference not end
        if args.sample:
            t0 = time.perf_counter()
            pos = np.load(f"{scratch}/pos.npy", mmap_mode="r")
            mass = np.load(f"{scratch}/mass.npy", mmap_mode="r")
            idx, acc = np.load(f"{scratch}/idx.npy"), np.load(f"{scratch}/acc.npy")
            err = rel_errors(acc, reference(pos, mass, idx, EPS))
            row["accuracy"] = {"sample": int(len(idx)), "median": float(np.median(err)),
                               "p99": float(np.percentile(err, 99)),
                               "max": float(err.max()), "reference_s": time.perf_counter() - t0}
            del pos, mass
        shutil.rmtree(scratch, ignore_errors=True)
        rows.append(row)
        dev = row["device_peak_mib"]
        owners = ", ".join(f"{k} {v / 2**20:.0f}" for k, v in row["ledger"]["at_peak"].items())
        acc = row.get("accuracy", {})
        print(f"N {n:>11}  setup {row['setup_s']:.1f} s  step {row['step_s']:.4f} s "
              f"({row['particles_per_s']:.3g} /s)  device {dev} MiB "
              f"({(dev or 0) * 2**20 / n:.1f} B/p)  plan {row['plan']['total'] / 2**20:.0f} MiB  "
              f"ledger {row['ledger']['peak'] / 2**20:.0f} MiB [{owners}]  host hwm "
              f"{row['host_hwm'] / 2**30:.1f} GiB  err median {acc.get('median', 0):.3g} "
              f"p99 {acc.get('p99', 0):.3g}  dE {row['energy_error']:.2e}  "
              f"wall {row['wall_s']:.0f} s",
              flush=True)
    write_json(args.json, {"rows": rows})


if __name__ == "__main__":
    main()
