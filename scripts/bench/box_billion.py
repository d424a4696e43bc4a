#!/usr/bin/env python
"""The largest periodic box of one device (issue 56): configs/cosmo_box.toml's ΛCDM box
(2LPT initial conditions at z = 49, TreePM) with ``--grid``³ particles, stepped
``--steps`` steps of its schedule, with the device memory by owner, the plan's
prediction, the set-up and step times by the caller's clock, and the matter power
spectrum P(k) of the last step against linear theory (a benchmark, not a test).

    PYTHONPATH=. python scripts/bench/box_billion.py --device nvidia --grid 1024 --steps 8 \\
        --set memory.mesh=float32 --set memory.velocities=float32

Each grid runs in its own process (``--one``) while this one samples ``nvidia-smi``'s
used memory every 50 ms.  The child:

1. ``Simulation.from_settings`` of the config with ``ics.n_grid`` = grid, the box scaled
   with the grid (100 Mpc/h per 128 points: the config's mean interparticle spacing and
   softening kept), ``cosmology.steps`` = steps and ``z_end`` set so that each step is
   the config's Δ ln a (512 steps from z = 49 to 0), no snapshots;
2. one step, then the others, timed together;
3. the ledger's peak by owner and the plan (``hybridtree.run.plan.device_plan``);
4. every particle's comoving position, copied to the host chunk by chunk into a file in
   ``--scratch`` (24 bytes a particle).
Then, the child gone and its device memory with it, this process computes P(k) of those
positions (``hybridtree.analysis.power.power_spectrum``, TSC interlaced, a mesh of
``--pk-mesh``³ on the same device) and its ratio to the linear P(k) × D(a)² (colossus,
Eisenstein & Hu) in the shells below k = 0.1 h/Mpc.

Units: seconds, bytes (MiB where said), k in h/Mpc, P in (Mpc/h)³.
"""

from __future__ import annotations

import argparse
import json
import math
import os
import shutil
import tempfile
import time
import tomllib
from pathlib import Path

import numpy as np

from common import Sampler, add_device, run_child, write_json

HERE = Path(__file__).resolve().parents[2]
CONFIG = HERE / "configs" / "cosmo_box.toml"
CHUNK = 1 << 24
#: the config's schedule: 512 steps uniform in ln a from z = 49 to z = 0
DLNA = math.log(50.0) / 512


def one(grid: int, device: str | None, steps: int, scratch: str, sets: list[str] = ()) -> dict:
    """One run of ``grid``³ particles (module docstring); ``sets``: settings
    ``section.name=value`` as ``hybridtree run --set`` takes them."""
    import hybridtree
    from hybridtree.config.settings import parse_overrides, validate
    from hybridtree.run.plan import device_plan
    raw = tomllib.loads(CONFIG.read_text())
    scale = grid / raw["ics"]["n_grid"]
    raw["ics"]["n_grid"] = grid
    raw["ics"]["box"] *= scale
    raw["cosmology"]["steps"] = steps
    raw["cosmology"]["z_end"] = 50.0 * math.exp(-steps * DLNA) - 1.0
    raw["output"] = {"dir": str(Path(scratch) / "out"), "redshifts": "", "diag_every": 1000}
    if device:
        raw["gravity"]["device"] = device
    settings = validate(raw)
    if sets:
        settings = settings.with_overrides(parse_overrides(list(sets)))
    n = grid ** 3
    t0 = time.perf_counter()
    sim = hybridtree.Simulation.from_settings(settings, quiet=True)
    setup = time.perf_counter() - t0
    sim.step(1)
    clock = sim._stepper.clock
    clock.settle()
    before = clock.snapshot()
    t1 = time.perf_counter()
    sim.step(steps - 1)
    step_s = (time.perf_counter() - t1) / max(1, steps - 1)
    clock.settle()
    stages = {k: (v - before.get(k, 0.0)) / max(1, steps - 1)
              for k, v in clock.snapshot().items()}
    rep = sim._rt.memory.report()
    plan = device_plan(sim.settings, sim._rt.info, n)
    row = {"grid": grid, "n": n, "sets": list(sets), "setup_s": setup, "step_s": step_s,
           "particles_per_s": n / step_s, "ledger": rep, "kind": sim._rt.info.kind,
           "device_name": sim._rt.info.name, "box": raw["ics"]["box"],
           "plan": {"owners": plan.owners, "buffers": plan.buffers, "total": plan.total,
                    "context": plan.context, "unseen": plan.unseen},
           "a": float(sim.a), "stage_s": stages}
    t2 = time.perf_counter()
    pos = np.lib.format.open_memmap(f"{scratch}/pos.npy", "w+", np.float64, (n, 3))
    state = sim._stepper.state
    for lo in range(0, n, CHUNK):
        hi = min(n, lo + CHUNK)
        pos[lo:hi] = state.download_rows(lo, hi).pos
    pos.flush()
    row["download_s"] = time.perf_counter() - t2
    sim.close()
    from hybridtree.run.size import status_bytes
    row["host_hwm"] = status_bytes("VmHWM")
    return row


def power(pos, box: float, n_mesh: int, device: str | None, z_end: float) -> dict:
    """P(k) of ``pos`` (comoving, config lengths: Mpc) and its ratio to linear theory."""
    from hybridtree.analysis.power import power_spectrum
    from hybridtree.analysis.power_device import analysis_runtime
    from hybridtree.config.settings import validate
    from hybridtree.run.options import background_of
    cosmo = background_of(validate(tomllib.loads(CONFIG.read_text())))
    t0 = time.perf_counter()
    ps = power_spectrum(pos, box, n_mesh, runtime=analysis_runtime(device))
    wall = time.perf_counter() - t0
    a = 1.0 / (1.0 + z_end)
    lin = cosmo.power(ps.k) * cosmo.growth(a) ** 2
    h = cosmo.mpc_h         # Mpc/h in Mpc
    low = ps.k * h < 0.1
    ratio = ps.power / lin
    # a lattice's ICs hold no Poisson shot noise: early on P is compared without the
    # subtraction too (at z ~ 46 the subtracted V/N is ~5 % of P at k < 0.1 h/Mpc)
    raw = (ps.power + ps.shot_noise) / lin
    return {"pk_s": wall, "k_h_mpc": (ps.k * h).tolist(), "p_mpc_h3": (ps.power / h ** 3).tolist(),
            "modes": ps.modes.tolist(), "linear_ratio": ratio.tolist(),
            "ratio_low_k": float(np.sum(ratio[low] * ps.modes[low]) / np.sum(ps.modes[low])),
            "ratio_low_k_raw": float(np.sum(raw[low] * ps.modes[low]) / np.sum(ps.modes[low])),
            "shot_noise_mpc_h3": ps.shot_noise / h ** 3, "n_mesh": n_mesh}


def main(argv: list[str] | None = None) -> None:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    add_device(p)
    p.add_argument("--grid", type=int, nargs="+", default=[32])
    p.add_argument("--steps", type=int, default=8)
    p.add_argument("--pk-mesh", type=int, default=0, help="P(k)'s mesh side (0: the grid)")
    p.add_argument("--timeout", type=float, default=560, help="seconds per grid")
    p.add_argument("--scratch", default=None, help="where the positions wait for P(k), "
                   "24 bytes a particle (default: the roomiest of /dev/shm, the temporary "
                   "folder and this folder)")
    p.add_argument("--set", dest="sets", action="append", default=[], metavar="KEY=VALUE",
                   help="a setting as `hybridtree run --set` takes it; repeatable")
    p.add_argument("--one", type=int, help=argparse.SUPPRESS)
    p.add_argument("--json", metavar="PATH")
    args = p.parse_args(argv)
    if args.one:
        print(json.dumps(one(args.one, args.device, args.steps, args.scratch, args.sets)),
              flush=True)
        return
    base = args.scratch or max((d for d in ["/dev/shm", tempfile.gettempdir(), os.getcwd()]
                                if os.path.isdir(d)), key=lambda d: shutil.disk_usage(d).free)
    rows = []
    for grid in args.grid:
        idle = Sampler.used()
        scratch = tempfile.mkdtemp(dir=base)
        print(f"# device {args.device}  idle {idle} MiB  scratch {scratch}", flush=True)
        row = run_child(__file__, grid, ["--steps", str(args.steps), "--scratch", scratch]
                        + [f"--set={x}" for x in args.sets], args.device, args.timeout, idle)
        if "failed" not in row:
            row["idle_mib"] = idle
            write_json(args.json, {"rows": rows + [row]})
            pos = np.load(f"{scratch}/pos.npy", mmap_mode="r")
            z_end = 50.0 * math.exp(-args.steps * DLNA) - 1.0
            row.update(power(pos, row["box"], args.pk_mesh or grid, args.device, z_end))
            del pos
            dev = row["device_peak_mib"]
            owners = ", ".join(f"{k} {v / 2**20:.0f}"
                               for k, v in row["ledger"]["at_peak"].items())
            print(f"grid {grid}^3  setup {row['setup_s']:.1f} s  step {row['step_s']:.3f} s "
                  f"({row['particles_per_s']:.3g} /s)  device {dev} MiB "
                  f"({(dev or 0) * 2**20 / row['n']:.1f} B/p)  plan "
                  f"{row['plan']['total'] / 2**20:.0f} MiB  ledger "
                  f"{row['ledger']['peak'] / 2**20:.0f} MiB [{owners}]  host hwm "
                  f"{row['host_hwm'] / 2**30:.1f} GiB  P/P_lin(k<0.1) {row['ratio_low_k']:.4f} "
                  f"(shot noise kept {row['ratio_low_k_raw']:.4f})"
                  f"  pk {row['pk_s']:.1f} s  wall {row['wall_s']:.0f} s", flush=True)
        shutil.rmtree(scratch, ignore_errors=True)
        rows.append(row)
    write_json(args.json, {"rows": rows})


if __name__ == "__main__":
    main()
