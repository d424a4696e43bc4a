#!/usr/bin/env python
"""Issue 21's benchmark (not a test): block against shared time steps on a cusp, and the
force error of the geometric and the relative opening criteria at equal cost.

    PYTHONPATH=. python scripts/bench/timesteps.py errors --device nvidia --n 1048576 4194304
    PYTHONPATH=. python scripts/bench/timesteps.py steps --device nvidia --n 1048576 4194304
    PYTHONPATH=. python scripts/bench/timesteps.py errors steps --quick --device cpu  # smoke

errors: per model (Plummer, Hernquist halo with a satellite, ``--snapshot`` files such as
a cosmological run's z = 0 snapshot) and N, the public ``accelerations`` of every
particle with the geometric criterion (theta list) and the relative one (alpha list;
a_old: the theta = 0.5 forces, as a run has its last step's), monopole and quadrupole;
errors on ``--sample`` random sinks against the direct hi/lo kernel (float32 pairs on
float64-split coordinates; its own error against float64 numpy, measured on 500 sinks of
the first model, is printed as ``reference``); cost: interactions per particle and the
caller's wall seconds (best of 2).

steps: the cusp (Hernquist halo with a satellite, eps ``--eps``) run to ``--t-end`` with
block steps (largest step ``--dt``, each of ``--eta``, max_bin) and with shared
steps dt / 2^k for k = ``--shared-from`` ... the deepest bin a block run used; wall seconds by the caller's clock around
``evolve``, energy error, 10/50/90 % Lagrangian radii about the centre of mass at the
end, and per-bin figures (particles, substeps, seconds, interactions).  One JSON line per
measurement (``--json`` rewrites its file after each).

openings: shared steps (dt 1/512) of Plummer and the cusp with each criterion: the
caller's seconds per ``step`` and interactions per particle per step.
"""

from __future__ import annotations

import argparse
import time
from pathlib import Path

import numpy as np

from common import JsonLines, add_device, plummer, rel_errors, timed

from hybridtree import Simulation
from hybridtree.config import parse_overrides
from hybridtree.gravity import accelerations, direct_reference
from hybridtree.gravity.tuning import TUNING
from hybridtree.ics import hernquist_satellite

OUT = JsonLines(None)


def emit(args, row: dict) -> None:
    OUT.path = args.json
    OUT.emit(row)


def model(name: str, n: int) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    if name == "plummer":
        return plummer(n, seed=1)
    if name == "cusp":
        return hernquist_satellite(n, seed=1)
    from hybridtree.io.snapshot import read_snapshot
    s = read_snapshot(name).particles
    return s.pos, s.vel, s.mass


def fresh_lists(device: str | None) -> None:
    """Forget the list room of earlier walks on the device's runtime (it only grows
    within a process): each configuration is timed with the lists its own walks need,
    not an earlier one's."""
    from hybridtree.device.choice import get_runtime
    from hybridtree.gravity import list_walk
    list_walk.list_room(get_runtime(device or None)).room = None


def errors(args) -> None:
    models = ["plummer", "cusp"] + list(args.snapshot)
    first = True
    for name in models:
        for n in (args.n if name in ("plummer", "cusp") else [None]):
            pos, _, mass = model(name, n)
            n = len(mass)
            eps = args.eps if name in ("plummer", "cusp") else args.snap_eps
            idx = np.random.default_rng(7).choice(n, size=min(args.sample, n), replace=False)
            ref = accelerations(pos, mass, eps, method="direct", sinks=pos[idx],
                                device=args.device).acc
            if first:
                k = idx[:min(500, len(idx))]
                exact = direct_reference(pos, mass, eps, sinks=pos[k])[0]
                e = rel_errors(ref[:len(k)], exact)
                emit(args, {"what": "reference", "model": name, "n": n,
                            "median": float(np.median(e)), "max": float(e.max())})
                first = False
            old = None
            for multipole in args.orders:
                runs = [("geometric", th, None) for th in args.theta] + \
                       [("relative", al, tm) for al in args.alpha for tm in args.theta_min]
                for (opening, knob, tmin), ng in [(r, g) for r in runs for g in args.n_group]:
                    kw = {"theta": knob} if opening == "geometric" else \
                         {"opening": "relative", "alpha": knob, "acc_old": old,
                          "theta_min": tmin}
                    fresh_lists(args.device)
                    f, wall = timed(lambda: accelerations(pos, mass, eps, multipole=multipole,
                                                          device=args.device, n_group=ng or None,
                                                          **kw))
                    if opening == "geometric" and knob == 0.5 and multipole == "monopole" \
                            and old is None:
                        old = f.acc
                    e = rel_errors(f.acc[idx], ref)
                    emit(args, {"what": "error", "model": Path(name).name, "n": n,
                                "multipole": multipole, "opening": opening, "knob": knob,
                                "theta_min": tmin, "n_group": ng,
                                "per_particle": f.interactions / n, "wall_s": wall,
                                "most_per_sink": int((f.n_pp + f.n_pc).max()),
                                "median": float(np.median(e)),
                                "p99": float(np.percentile(e, 99)), "max": float(e.max())})


def radii(pos: np.ndarray, mass: np.ndarray) -> list[float]:
    com = (mass[:, None] * pos).sum(axis=0) / mass.sum()
    r = np.linalg.norm(pos - com, axis=1)
    order = np.argsort(r)
    cum = np.cumsum(mass[order]) / mass.sum()
    return [float(r[order][np.searchsorted(cum, q)]) for q in (0.1, 0.5, 0.9)]


def warm_up(args) -> None:
    """Compile the kernels of a run before anything is timed."""
    pos, vel, mass = hernquist_satellite(2000, seed=2)
    for stepping in ("shared", "block"):
        Simulation(pos, vel, mass, quiet=True, settings={
            "gravity.eps": args.eps, "gravity.device": args.device, "time.dt": 0.25,
            "time.stepping": stepping, "gravity.multipole": args.multipole}).evolve(0.5)


def steps(args) -> None:
    variants = [(e, r, m) for e in args.eta for r in args.active_replicate
                for m in args.active_merge]
    warm_up(args)
    for n in args.n:
        pos, vel, mass = model(args.model, n)
        common = {"gravity.eps": args.eps, "gravity.device": args.device,
                  "gravity.multipole": args.multipole, "output.diag_every": 10 ** 9,
                  **({} if args.refit_fraction is None else
                     {"gravity.refit_fraction": args.refit_fraction}),
                  **parse_overrides(args.set)}

        def run(settings: dict, tuning=TUNING) -> tuple[dict, Simulation]:
            sim = Simulation(pos, vel, mass, quiet=True, settings={**common, **settings})
            sim._stepper.engine.tuning = tuning         # the walks' choices (a tuning aid)
            t0 = time.perf_counter()
            sim.evolve(args.t_end)
            wall = time.perf_counter() - t0
            p = sim.particles()
            return {"n": n, "wall_s": wall, "energy_error": sim.energy_error,
                    "radii": radii(p.pos, p.mass), "steps": sim.steps,
                    "seconds": {k: round(v, 3) for k, v in sim._stepper.clock.snapshot().items()
                                if isinstance(v, float)}}, sim

        blocks, deep = [], 0
        for eta, rep, merge in variants:
            tuning = TUNING
            if rep is not None:         # the active walk's copies on GPUs (a tuning aid)
                tuning = tuning.for_kind("gpu", active_copies=rep)
            if merge is not None:       # its merging of sparse groups (a tuning aid)
                w, cap, grow = merge.split(",")
                for kind in ("gpu", "cpu", "other"):
                    tuning = tuning.for_kind(kind, active_merge=(int(w), int(cap), float(grow)))
            row, sim = run({"time.stepping": "block", "time.dt": args.dt, "time.eta": eta,
                            "time.max_bin": args.max_bin}, tuning)
            row["active_replicate"], row["active_merge"] = rep, merge
            bins = sim.timebins()
            deep = max(deep, max(r["bin"] for r in bins))
            # forces of the block run over those of shared steps of its deepest bin
            work = sum(r["forces"] for r in bins) / (n * sim.steps * 2 ** max(
                r["bin"] for r in bins))
            emit(args, {"what": "block", **row, "dt": args.dt, "eta": eta,
                        "work_vs_deepest": work,
                        "counts": dict(sim._stepper.counts), "bins": bins})
            blocks.append(row)
            del sim
        for k in range(args.shared_from, deep + 1):
            dt = args.dt / 2 ** k
            row, sim = run({"time.dt": dt})
            del sim
            emit(args, {"what": "shared", **row, "dt": dt, "k": k,
                        "vs_block": [{"eta": eta, "speedup_of_block": row["wall_s"] / b["wall_s"],
                                      "active_replicate": b["active_replicate"],
                                      "active_merge": b["active_merge"],
                                      "radii_vs_block": max(abs(x / y - 1) for x, y in
                                                            zip(row["radii"], b["radii"]))}
                                     for (eta, _, _), b in zip(variants, blocks)]})


def openings(args) -> None:
    """Shared steps of a run with each criterion: wall seconds per step (caller's clock
    around ``step``, after one warm-up step) and interactions per particle per step."""
    for name in ("plummer", "cusp"):
        for n in args.n:
            pos, vel, mass = model(name, n)
            for opening, knob, tmin in [("geometric", th, None) for th in args.theta] + \
                    [("relative", al, tm) for al in args.alpha for tm in args.theta_min]:
                key = "gravity.theta" if opening == "geometric" else "gravity.alpha"
                extra = {} if tmin is None else {"gravity.theta_min": tmin}
                fresh_lists(args.device)
                sim = Simulation(pos, vel, mass, quiet=True, settings={
                    "gravity.eps": args.eps, "gravity.device": args.device,
                    "gravity.opening": opening, key: knob, "time.dt": 1 / 512,
                    "gravity.multipole": args.multipole,
                    "output.diag_every": 10 ** 9, **extra})
                sim.step(1)
                before = sim._stepper.counts["interactions"]
                t0 = time.perf_counter()
                sim.step(args.run_steps)
                wall = (time.perf_counter() - t0) / args.run_steps
                inter = (sim._stepper.counts["interactions"] - before) / args.run_steps / n
                emit(args, {"what": "run", "model": name, "n": n, "opening": opening,
                            "multipole": args.multipole,
                            "knob": knob, "theta_min": tmin, "step_s": wall,
                            "per_particle": inter})
                del sim


def main(argv: list[str] | None = None) -> None:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("parts", nargs="+", choices=("errors", "steps", "openings"))
    p.add_argument("--run-steps", type=int, default=8)
    add_device(p)
    p.add_argument("--n", type=int, nargs="+", default=[1 << 20, 1 << 22])
    p.add_argument("--eps", type=float, default=0.01)
    p.add_argument("--sample", type=int, default=2000)
    p.add_argument("--theta", type=float, nargs="+", default=[0.4, 0.5, 0.6, 0.7, 0.8])
    p.add_argument("--alpha", type=float, nargs="+",
                   default=[0.0005, 0.001, 0.002, 0.003, 0.005, 0.01])
    p.add_argument("--snapshot", nargs="*", default=[], help="more models: snapshot files")
    p.add_argument("--snap-eps", type=float, default=0.0, help="softening for --snapshot")
    p.add_argument("--dt", type=float, default=1 / 16)
    p.add_argument("--eta", type=float, nargs="+", default=[0.2])
    p.add_argument("--theta-min", type=float, nargs="+", default=[0.25])
    p.add_argument("--max-bin", type=int, default=12)
    p.add_argument("--t-end", type=float, default=0.5)
    p.add_argument("--shared-from", type=int, default=2, help="smallest k of dt / 2^k")
    p.add_argument("--multipole", default="monopole")
    p.add_argument("--orders", nargs="+", default=["monopole", "quadrupole"],
                   choices=("monopole", "quadrupole"), help="errors: the multipole orders")
    p.add_argument("--n-group", type=int, nargs="+", default=[0],
                   help="errors: sinks per group to try (0: the device's default)")
    p.add_argument("--model", default="cusp",
                   help="steps: plummer, cusp (a Hernquist cusp with a satellite) or a snapshot")
    p.add_argument("--refit-fraction", type=float, default=None,
                   help="steps: gravity.refit_fraction (0: build every tree; default: the "
                        "schema's)")
    p.add_argument("--set", action="append", default=[], metavar="KEY=VALUE",
                   help="steps: a setting of both runs, as `hybridtree run --set` takes it, "
                        "e.g. gravity.n_group=256 (repeatable)")
    p.add_argument("--active-replicate", type=int, nargs="+", default=[None],
                   help="steps: one block run per value of the active walk's copies of a "
                        "small group's sinks on GPUs (WalkTuning's active_copies; default: "
                        "the code's own)")
    p.add_argument("--active-merge", nargs="+", default=[None],
                   help="steps: one block run per W,CAP,GROW of the active walk's merging "
                        "of sparse groups (WalkTuning's active_merge; 1,0,1 merges none; "
                        "default: the code's own)")
    p.add_argument("--quick", action="store_true", help="N = 20000, sample 300 (smoke)")
    p.add_argument("--json")
    args = p.parse_args(argv)
    if args.quick:
        args.n, args.sample = [20_000], 300
    if "errors" in args.parts:
        errors(args)
    if "steps" in args.parts:
        steps(args)
    if "openings" in args.parts:
        openings(args)


if __name__ == "__main__":
    main()
