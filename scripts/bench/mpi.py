#!/usr/bin/env python3
"""Time breakdown per step and LET volumes for K = 1..4 processes (mpiexec) on one device.

For each K it starts ``mpiexec -n K`` on this script in worker mode, which integrates a
Plummer sphere (Hénon units, ε = 0.01, θ = 0.5) with the normal tree and with the hybrid
tree (n_hard = 4, r_out = 3 core spacings, r_in = r_out / 10), and prints per soft step the
mean over steps of the slowest process's seconds per phase, the load imbalance and the
LET entries sent (soft and hard, summed over processes, per force).

    python scripts/bench/mpi.py -n 100000 --steps 3
    python scripts/bench/mpi.py -n 200000 --device cpu --procs 1 2 4    # GPU machine's PoCL
    python scripts/bench/mpi.py -n 100000 --overlap     # local walk while the LETs travel
    python scripts/bench/mpi.py -n 4194304 --device nvidia --procs 1 2 4 --json out.json

With one process it also times the one-process stepper that ``hybridtree run`` uses
without mpiexec (scheme names ``normal_serial``, ``hybrid_serial``), the baseline of
"what parallelism costs".  With K > 1, ``normal_alone``: every process steps its N/K
particles (every K-th) as a one-process run, with no communication and a barrier before
each step: the cost of K processes time-sharing one GPU, without any parallel work.  ``energy_error``: relative change of the total energy over
the timed steps (the hybrid run's soft step is n_hard normal steps, so equal errors mean
a fair comparison per unit time).
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
from pathlib import Path

import time

import numpy as np

from common import add_device, core_spacing, plummer, write_json

PHASES = ("decompose", "exchange", "let_select", "let_comm", "build", "walk", "integrate",
          "reduce")


def worker(a: argparse.Namespace) -> None:
    from hybridtree.gravity.engine import GravitySettings
    from hybridtree.particles import Particles
    from hybridtree.device.choice import get_runtime
    from hybridtree.parallel import world
    from hybridtree.parallel.stepping import ParallelStepper
    from hybridtree.gravity.splitting import Changeover

    from hybridtree.integrate.stepper import SerialStepper

    comm = world()
    pos, vel, mass = plummer(a.n, seed=1)
    mine = np.flatnonzero(np.arange(a.n) % comm.size == comm.rank)
    spacing = core_spacing(a.n)
    out = {"procs": comm.size}
    rt = get_runtime(a.device)
    schemes = ("normal", "hybrid") + (("normal_serial", "hybrid_serial") if comm.size == 1
                                      else ("normal_alone",))
    for scheme in schemes:
        p = Particles(pos[mine], vel[mine], mass[mine], mine.astype(np.uint64))
        split = Changeover(0.3 * spacing, 3 * spacing, "dll") if scheme.startswith("hybrid") \
            else None
        g = GravitySettings(eps=0.01, theta=0.5, changeover=split, n_hard=4,
                            device=a.device or "")
        if scheme.endswith(("_serial", "_alone")):
            stepper = SerialStepper(g, p, rt)
        else:
            stepper = ParallelStepper(g, p, rt, comm, overlap=a.overlap)
            stepper.engine.hard_second_tree = a.hard_tree == "second"
        dt = a.dt * (4 if scheme.startswith("hybrid") else 1)
        stepper.start(False)
        stepper.step(dt)                          # warm-up (compilation)
        alone = scheme.endswith("_alone")
        m0 = stepper.moments() if not alone else {"kinetic": 0.0, "potential": 1.0}
        steps = []
        for _ in range(a.steps):
            t0, b0 = stepper.clock.snapshot(), stepper.breakdown()
            if alone:
                comm.barrier()
            w0 = time.perf_counter()
            stepper.step(dt)
            wall = time.perf_counter() - w0
            t1, b1 = stepper.clock.snapshot(), stepper.breakdown()
            row = {k: t1.get(k, 0.0) - t0.get(k, 0.0) for k in PHASES}
            row.update({k: b1.get(k, 0.0) - b0.get(k, 0.0) for k in b1})
            row["step_s"] = wall
            steps.append(row)
        m1 = stepper.moments() if not alone else m0
        e0, e1 = m0["kinetic"] + m0["potential"], m1["kinetic"] + m1["potential"]
        row = {"energy_error": (e1 - e0) / abs(e0), "backend": stepper.backend}
        for ph in PHASES + ("step_s",):
            per_step = [comm.allreduce(s.get(ph, 0.0), "max")[0] for s in steps]
            row[ph] = float(np.mean(per_step))
        row["force"] = sum(row[k] for k in ("let_select", "let_comm", "build", "walk"))
        row["imbalance"] = float(np.mean([s.get("imbalance", 1.0) for s in steps]))
        row["let_select_share"] = row["let_select"] / row["step_s"]
        row["migrants"] = float(np.mean([comm.allreduce(s.get("migrants", 0.0))[0]
                                         for s in steps]))
        n_hard_forces = 4 if scheme.startswith("hybrid") else 0
        for part, nf in (("soft", 1), ("hard", n_hard_forces)):
            tot = [comm.allreduce(s.get(f"let_{part}_entries", 0.0))[0] for s in steps]
            byt = [comm.allreduce(s.get(f"let_{part}_bytes", 0.0))[0] for s in steps]
            row[f"let_{part}_entries_per_force"] = float(np.mean(tot)) / max(nf, 1)
            row[f"let_{part}_bytes_per_force"] = float(np.mean(byt)) / max(nf, 1)
        out[scheme] = row
    if comm.rank == 0:
        print("RESULT " + json.dumps(out), flush=True)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("-n", type=int, default=100_000)
    ap.add_argument("--steps", type=int, default=3, help="timed (soft) steps")
    ap.add_argument("--dt", type=float, default=1 / 256, help="normal step = hard step")
    ap.add_argument("--procs", type=int, nargs="+", default=[1, 2, 3, 4])
    add_device(ap)
    ap.add_argument("--overlap", action="store_true",
                    help="non-blocking LET exchange with the local walk meanwhile")
    ap.add_argument("--hard-tree", choices=("second", "merged"), default="merged",
                    help="hard substeps: received hard LET as a second tree, or merged")
    ap.add_argument("--json", default=None, help="write every result here")
    ap.add_argument("--worker", action="store_true", help=argparse.SUPPRESS)
    a = ap.parse_args()
    if a.worker:
        return worker(a)
    mpiexec = Path(sys.executable).parent / "mpiexec"
    mpiexec = str(mpiexec) if mpiexec.exists() else "mpiexec"
    print(f"N = {a.n}, {a.steps} soft steps, overlap {a.overlap}; seconds per soft step "
          "(slowest process), LET entries per force summed over processes")
    cols = ("procs", "scheme") + PHASES + ("force", "step_s", "imbalance",
                                          "let_soft_entries_per_force",
                                          "let_hard_entries_per_force", "energy_error")
    print(" | ".join(cols))
    results = {}
    for k in a.procs:
        argv = [mpiexec, "-n", str(k), sys.executable, __file__, "--worker", "-n", str(a.n),
                "--steps", str(a.steps), "--dt", str(a.dt), "--hard-tree", a.hard_tree] + \
            (["--device", a.device] if a.device else []) + (["--overlap"] if a.overlap else [])
        proc = subprocess.run(argv, capture_output=True, text=True, env=os.environ)
        line = [x for x in proc.stdout.splitlines() if x.startswith("RESULT ")]
        if proc.returncode or not line:
            print(f"K = {k} failed:\n{proc.stderr[-2000:]}")
            continue
        res = results[k] = json.loads(line[0][7:])
        for scheme in [x for x in res if x != "procs"]:
            r = res[scheme]
            cells = [str(k), scheme] + [f"{r[c]:.4f}" for c in PHASES + ("force", "step_s")] + \
                [f"{r['imbalance']:.2f}", f"{r['let_soft_entries_per_force']:.0f}",
                 f"{r['let_hard_entries_per_force']:.0f}", f"{r['energy_error']:.2e}"]
            print(" | ".join(cells), flush=True)
    write_json(a.json, {"n": a.n, "steps": a.steps, "dt": a.dt, "overlap": a.overlap,
                        "hard_tree": a.hard_tree, "results": results})


if __name__ == "__main__":
    main()
