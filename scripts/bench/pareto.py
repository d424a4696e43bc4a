#!/usr/bin/env python
"""Issue 57's benchmark (not a test): block against shared time steps at equal accuracy.

    PYTHONPATH=. python scripts/bench/pareto.py cusp --device nvidia --n 4194304 \
        --json cusp.jsonl --plot cusp.png
    PYTHONPATH=. python scripts/bench/pareto.py m31 --device nvidia --n 4194304 --seed 2 \
        --json m31.jsonl --plot m31.png
    PYTHONPATH=. python scripts/bench/pareto.py cusp --quick --device cpu      # smoke, ~1 min
    PYTHONPATH=. python scripts/bench/pareto.py --from cusp.jsonl --plot cusp.png  # plot only

One system -- ``cusp`` (:func:`hybridtree.ics.hernquist_satellite`, eps ``--eps``) or
``m31`` (GOTHIC's M31 model: configs/galaxy_m31.toml's model, softening and largest step)
-- of ``--n`` particles (``--seed``) is run from t = 0 to ``--t-end`` (``--long``: ten
times that) with block steps (largest step dt, or dt / 2^``--block-k``, ``--eta`` each,
``time.max_bin``; ``--refit`` F each: ``gravity.refit_fraction``; ``--rebin`` R each:
``time.rebin``) and with shared steps
dt / 2^k (``--shared`` k each), after a converged
shared run of dt / 2^``--ref``.
Each run is timed by the caller's clock around ``hybridtree.Simulation(...)`` and
``evolve`` (the first forces included, the particles' generation and the kernels' builds
not: an untimed warm-up at small N builds them first), the wall time a user waits for.
One JSON line per run: wall seconds, the relative energy error at the end and its largest
magnitude over the run (sampled after every largest step, the same times for both
schemes), the 10/50/90 % Lagrangian radii (about the centre of mass; per GADGET type for
M31) and their largest relative difference from the converged run's, and the distance of
``--tracers`` fixed random particles from their place in the converged run (median and
90th percentile, in units of the converged run's half-mass radius); block runs add their
time bins.  Then one ``summary`` line per block run: the fastest shared run whose energy
error (and, for ``orbits``, whose radii and tracer error as well) is at most the block
run's, and that run's wall over the block run's (``speedup``: > 1 where block steps pay;
issue 57 asks for 2), and the same of ``evolve`` alone (``speedup_evolve``: the set-up of
``Simulation(...)``, its checks, upload and first forces, apart; rows keep ``setup_s`` and
``evolve_s``), and ``energy_interpolated``: the wall of a shared run of the block run's
energy error on the shared front of the call (the converged run included), interpolated in
log-log between the two runs that bracket it (a shared step need not be a power of two).  ``--plot`` draws the Pareto fronts (largest energy error, and the
tracers' median error, against wall time) as a PNG.

Wall times on a machine shared with other work are noisy; compare runs of one call.
"""

from __future__ import annotations

import argparse
import json
import math
import time
from pathlib import Path

import numpy as np

from common import ROOT, JsonLines, add_device, run_header, sample_indices

from hybridtree import Simulation
from hybridtree.config import parse_overrides
from hybridtree.errors import HybridtreeError
from hybridtree.integrate.schemes import REBIN
from hybridtree.state.quantities import lagrangian_radii

M31_CONFIG = ROOT / "configs" / "galaxy_m31.toml"
#: per system: (eps, largest step, t_end, max_bin) -- the issue's runs
SYSTEMS = {"cusp": (0.005, 1 / 16, 0.5, 12), "m31": (None, None, 10.5, None)}


def particles(args) -> tuple[np.ndarray, ...]:
    """(pos, vel, mass, ids, types) of the system (internal units)."""
    if args.system == "cusp":
        from hybridtree.ics import hernquist_satellite
        pos, vel, mass = hernquist_satellite(args.n, seed=args.seed)
        return pos, vel, mass, np.arange(1, args.n + 1, dtype=np.uint64), None
    from hybridtree.ics.galaxy import galaxy, m31
    return galaxy(m31(args.n), seed=args.seed)


def system_settings(args) -> dict:
    """eps, largest step, max_bin (the options', else the system's defaults)."""
    eps, dt, t_end, max_bin = SYSTEMS[args.system]
    if args.system == "m31":
        from hybridtree.config import load_config
        cfg = load_config(M31_CONFIG)
        eps, dt, max_bin = cfg.gravity.eps, cfg.time.dt, cfg.time.max_bin
    args.eps = args.eps or eps
    args.dt = args.dt or dt
    args.t_end = (args.t_end or t_end) * (10 if args.long else 1)
    args.max_bin = max_bin if args.max_bin is None else args.max_bin
    return {"gravity.eps": args.eps, "gravity.device": args.device,
            **parse_overrides(args.set)}


def radii(p, types) -> dict[str, list[float]]:
    """10/50/90 % Lagrangian radii about the centre of mass: ``all``, and per GADGET type
    where there are several."""
    out = {"all": lagrangian_radii(p.pos, p.mass)}
    if types is not None and len(np.unique(types)) > 1:
        for t in np.unique(types):
            rows = types == t
            out[f"type{int(t)}"] = lagrangian_radii(p.pos[rows], p.mass[rows])
    return out


def one_run(args, ics, common: dict, how: dict, diag_every: int) -> tuple[dict, dict]:
    """Run one configuration; (row, what the comparison needs: tracers' positions)."""
    pos, vel, mass, ids, types = ics
    settings = {**common, "time.dt": how.get("time.dt", args.dt),
                "output.diag_every": diag_every, **how}
    t0 = time.perf_counter()
    sim = Simulation(pos, vel, mass, ids, types=types, quiet=True, settings=settings)
    t1 = time.perf_counter()
    sim.evolve(args.t_end)
    wall = time.perf_counter() - t0
    try:
        d = sim.diagnostics
        err = d["rel_energy_error"]
        p = sim.particles()
        bins = sim.timebins()
        row = {"n": len(mass), "t_end": args.t_end, "wall_s": wall,
               "setup_s": t1 - t0, "evolve_s": wall - (t1 - t0), "steps": sim.steps,
               "energy_error": float(sim.energy_error),
               "energy_error_max": float(np.nanmax(np.abs(err))),
               "radii": radii(p, types)}
        if bins:
            row["substeps"] = int(sum(b["substeps"] for b in bins))
            row["forces_per_particle"] = sum(b["forces"] for b in bins) / len(mass)
            row["deepest_bin"] = max(b["bin"] for b in bins if b["particles"])
            row["bins"] = [{k: b[k] for k in ("bin", "particles", "substeps", "seconds",
                                              "forces", "interactions")} for b in bins]
            row["refits"] = int(sim._stepper.counts.get("refits", 0))
        else:
            row["forces_per_particle"] = float(sim.steps)
        return row, {"tracers": np.array(p.pos[args.tracer_rows]), "radii": row["radii"]}
    finally:
        sim.close()


def against(row: dict, mine: dict, ref: dict) -> None:
    """The orbit measures of ``row`` against the converged run (in place)."""
    scale = ref["radii"]["all"][1]
    dist = np.linalg.norm(mine["tracers"] - ref["tracers"], axis=1) / scale
    row["tracer_median"] = float(np.median(dist))
    row["tracer_p90"] = float(np.percentile(dist, 90))
    row["radii_error"] = max(abs(a / b - 1) for key in ref["radii"]
                             for a, b in zip(mine["radii"][key], ref["radii"][key]))


def warm_up(args, common: dict) -> None:
    """Build the kernels of both schemes before anything is timed."""
    n = min(args.n, 4096)
    small = argparse.Namespace(**{**vars(args), "n": n, "seed": args.seed + 1000,
                                  "tracer_rows": np.arange(1)})
    ics = particles(small)
    for how in ({"time.stepping": "block", "time.eta": 0.2, "time.max_bin": args.max_bin},
                {}):
        sim = Simulation(*ics[:4], types=ics[4], quiet=True,
                         settings={**common, "time.dt": args.dt, **how})
        sim.step(1)
        sim.close()


def measure(args) -> list[dict]:
    common = system_settings(args)
    ics = particles(args)
    args.tracer_rows = np.sort(sample_indices(args.n, args.tracers))
    out = JsonLines(args.json)
    print(run_header(args.device or "default"), flush=True)
    warm_up(args, common)
    base = {"system": args.system, "seed": args.seed, "device": args.device, "eps": args.eps,
            "dt": args.dt, "sets": args.set}
    runs = [("reference", args.ref, None)] + \
        [("block", kb, (eta, f, rb)) for kb in args.block_k for rb in (args.rebin or [None])
         for eta in args.eta for f in (args.refit or [None])] + \
        [("shared", k, None) for k in args.shared]
    ref = None
    kept = Path(args.ref_file) if args.ref_file else None
    if kept is not None and kept.is_file():     # the converged run of an earlier call
        ref, row = _load_ref(kept, args)
        out.emit({**row, "from": str(kept)})
        runs = runs[1:]
    for what, k, eta in runs:
        if what == "block":
            eta, f, rb = eta
            # largest step dt / 2^k (--block-k): bin 0 is the step of most particles
            how = {"time.stepping": "block", "time.eta": eta, "time.max_bin": args.max_bin,
                   "time.dt": args.dt / 2 ** k,
                   **({} if f is None else {"gravity.refit_fraction": f}),
                   **({} if rb is None else {"time.rebin": rb})}
            row, mine = one_run(args, ics, common, how, 2 ** k)
            row = {"what": what, **base, "eta": eta, "block_k": k, "max_bin": args.max_bin,
                   **({} if f is None else {"refit_fraction": f}),
                   **({} if rb is None else {"rebin": rb}), **row}
        else:       # diagnostics after every largest step, as the block runs'
            row, mine = one_run(args, ics, common, {"time.dt": args.dt / 2 ** k}, 2 ** k)
            row = {"what": what, **base, "k": k, "step": args.dt / 2 ** k, **row}
        if ref is None:
            ref = mine
        against(row, mine, ref)
        if what == "reference" and kept is not None:
            _save_ref(kept, row, mine)
        out.emit(row)
    for row in summary(out.rows):
        out.emit(row)
    return out.rows


def _save_ref(path: Path, row: dict, mine: dict) -> None:
    """The converged run's row, tracers and radii, for later calls of the same system."""
    np.savez(path, tracers=mine["tracers"], row=json.dumps(row))


def _load_ref(path: Path, args) -> tuple[dict, dict]:
    """(what the comparison needs, the row) of a converged run kept by :func:`_save_ref`;
    it must be this call's system, N, seed, span and step."""
    with np.load(path) as f:
        row, tracers = json.loads(str(f["row"])), np.array(f["tracers"])
    want = {"system": args.system, "n": args.n, "seed": args.seed, "t_end": args.t_end,
            "k": args.ref, "dt": args.dt}
    have = {key: row.get(key) for key in want}
    if have != want or len(tracers) != len(args.tracer_rows):
        raise SystemExit(f"--ref-file {path}: kept for {have}, this call is {want}")
    return {"tracers": tracers, "radii": row["radii"]}, row


def interpolated_wall(points: list[tuple[float, float]], error: float) -> dict | None:
    """The wall a shared run of energy error ``error`` would take: (wall, error) ``points``
    of shared runs, sorted by wall, interpolated in log-log between the two neighbours in
    wall whose errors bracket it (error ∝ wall^-p between them); None where none do."""
    pts = sorted(points)
    for (w1, e1), (w2, e2) in zip(pts, pts[1:]):
        if e1 > error >= e2 > 0:
            slope = math.log(w2 / w1) / math.log(e2 / e1)
            return {"wall_s": w1 * math.exp(slope * math.log(error / e1)),
                    "between": [w1, w2]}
    return None


def summary(rows: list[dict]) -> list[dict]:
    """Per block run: the fastest shared run at least as accurate, and the speed-up; and
    the wall of a shared run of its energy error on the shared front (the converged run
    included) interpolated in log-log (``energy_interpolated``: a shared step is not
    bound to powers of two)."""
    shared = [r for r in rows if r["what"] == "shared"]
    front = [(r["wall_s"], r["energy_error_max"]) for r in rows
             if r["what"] in ("shared", "reference") and "from" not in r]
    out = []
    for b in (r for r in rows if r["what"] == "block"):
        line = {"what": "summary", "eta": b["eta"], "block_k": b.get("block_k", 0),
                **{key: b[key] for key in ("refit_fraction", "rebin") if key in b},
                "block_wall_s": b["wall_s"],
                "block_energy_error_max": b["energy_error_max"]}
        for name, ok in (("energy", lambda s: s["energy_error_max"] <= b["energy_error_max"]),
                         ("orbits", lambda s: s["energy_error_max"] <= b["energy_error_max"]
                          and s["radii_error"] <= b["radii_error"]
                          and s["tracer_median"] <= b["tracer_median"])):
            good = [s for s in shared if ok(s)]
            best = min(good, key=lambda s: s["wall_s"]) if good else None
            line[name] = None if best is None else {
                "k": best["k"], "wall_s": best["wall_s"],
                "speedup": best["wall_s"] / b["wall_s"],
                # the steps alone (evolve: its reports included), set-up apart
                **({"speedup_evolve": best["evolve_s"] / b["evolve_s"]}
                   if "evolve_s" in b and "evolve_s" in best else {})}
        interp = interpolated_wall(front, b["energy_error_max"])
        line["energy_interpolated"] = None if interp is None else {
            **interp, "speedup": interp["wall_s"] / b["wall_s"]}
        out.append(line)
    return out


def block_label(r: dict) -> str:
    k = r.get("block_k", 0)
    return f"η={r['eta']:g}" + (f", Δt/{2 ** k}" if k else "") + \
        (f", refit {r['refit_fraction']:g}" if "refit_fraction" in r else "") + \
        (f", rebin {r['rebin']}" if "rebin" in r else "")


def plot(rows: list[dict], path: str, cost: str = "wall_s") -> None:
    """Largest |ΔE/E| and the tracers' median error against wall time (``cost``
    "wall_s"), or against forces per particle ("forces_per_particle": the work, which a
    loaded machine does not change), both schemes."""
    import matplotlib
    matplotlib.use("Agg")
    import matplotlib.pyplot as plt
    runs = [r for r in rows if r["what"] in ("block", "shared")]
    fig, axes = plt.subplots(1, 2, figsize=(10, 4.2))
    for ax, key, label in ((axes[0], "energy_error_max", "largest |ΔE/E| over the run"),
                           (axes[1], "tracer_median",
                            "tracers' median error / r50 (converged run)")):
        # one line per scheme, and for block runs per largest step and refit setting,
        # joined in the order of the step (η falling, Δt falling), not of the cost: a
        # noisy wall must not reorder the front
        lines: dict[tuple, list[dict]] = {}
        for r in runs:
            key_of = (("block", r.get("block_k", 0), r.get("refit_fraction"), r.get("rebin"))
                      if r["what"] == "block" else ("shared", 0, None, None))
            lines.setdefault(key_of, []).append(r)
        for n_line, (group, members) in enumerate(sorted(
                lines.items(), key=lambda kv: (kv[0][0], kv[0][1], kv[0][2] or 0,
                                               kv[0][3] or ""))):
            what, k, refit, rebin = group
            members.sort(key=lambda r: -r["eta"] if what == "block" else r["k"])
            pts = [(r[cost], max(r[key], 1e-16),
                    block_label(r) if what == "block" else f"Δt/{2 ** r['k']}")
                   for r in members]
            name = what if what == "shared" else "block" + (
                f", largest Δt/{2 ** k}" if k else "") + (
                f", refit {refit:g}" if refit is not None else "") + (
                f", rebin {rebin}" if rebin is not None else "")
            ax.loglog([p[0] for p in pts], [p[1] for p in pts],
                      "s--" if what == "shared" else "o-",
                      color="C1" if what == "shared" else f"C{0 if not n_line else n_line + 1}",
                      label=name)
            for x, y, text in pts:
                ax.annotate(text, (x, y), textcoords="offset points", xytext=(4, 4),
                            fontsize=7)
        ax.set_xlabel("wall time (s, caller's clock)" if cost == "wall_s" else
                      "forces per particle (all substeps)")
        ax.set_ylabel(label)
        ax.grid(True, which="both", alpha=0.3)
        ax.legend()
    r0 = runs[0]
    fig.suptitle(f"{r0['system']}, N = {r0['n']}, t = 0 .. {r0['t_end']:g}, "
                 f"device {r0['device'] or 'default'}: block vs shared steps")
    fig.tight_layout()
    fig.savefig(path, dpi=110)
    print(f"# wrote {path}")


def main(argv: list[str] | None = None) -> list[dict]:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("system", nargs="?", choices=tuple(SYSTEMS))
    add_device(p)
    p.add_argument("--n", type=int, default=1 << 22)
    p.add_argument("--seed", type=int, default=1)
    p.add_argument("--eps", type=float, help="softening (default: the system's)")
    p.add_argument("--dt", type=float, help="the largest step (default: the system's)")
    p.add_argument("--t-end", type=float, help="default: the system's span")
    p.add_argument("--long", action="store_true", help="ten times the span")
    p.add_argument("--max-bin", type=int, help="block runs' time.max_bin (default: the system's)")
    p.add_argument("--eta", type=float, nargs="+", default=[0.4, 0.2, 0.1, 0.05])
    p.add_argument("--block-k", type=int, nargs="+", default=[0],
                   help="block runs: largest step dt / 2^k, each k (default: dt)")
    p.add_argument("--rebin", nargs="+", choices=REBIN,
                   help="block runs: each with time.rebin R (default: the setting's; "
                        "step: bins chosen only at each largest step's start)")
    p.add_argument("--refit", type=float, nargs="+", metavar="F",
                   help="block runs: each with gravity.refit_fraction F (default: the "
                        "setting's; a force of some particles refits the last tree while "
                        "the refits' forces since its build stay within F N)")
    p.add_argument("--shared", type=int, nargs="*", default=[2, 3, 4, 5],
                   help="shared runs: k of dt / 2^k")
    p.add_argument("--ref", type=int, default=7, help="the converged run: dt / 2^ref")
    p.add_argument("--tracers", type=int, default=1000)
    p.add_argument("--ref-file", metavar="NPZ",
                   help="keep the converged run here (.npz), or take it from here where it "
                        "exists (the same system, N, seed, span and --ref)")
    p.add_argument("--set", action="append", default=[], metavar="KEY=VALUE",
                   help="a setting of every run, as `hybridtree run --set` takes it")
    p.add_argument("--quick", action="store_true",
                   help="smoke: N = 4096, four largest steps, eta 0.4 0.2 0.1, shared 2 3 4, "
                        "ref 6")
    p.add_argument("--json", help="rewrite this file (JSON lines) after each run")
    p.add_argument("--plot", help="a PNG of the Pareto fronts")
    p.add_argument("--from", dest="source", help="plot the rows of this JSON-lines file")
    p.add_argument("--cost", choices=("wall_s", "forces_per_particle"), default="wall_s",
                   help="--plot's x axis: wall seconds, or forces per particle")
    args = p.parse_args(argv)
    if args.source:
        if not Path(args.source).is_file():
            p.error(f"--from {args.source}: no such file (a --json file of this script)")
        rows = [json.loads(line) for line in Path(args.source).read_text().splitlines()
                if line.startswith("{")]
    elif args.system is None:
        p.error("give a system (cusp or m31), or --from FILE with --plot")
    else:
        if args.quick:
            args.n, args.eta, args.shared, args.ref = 4096, [0.4, 0.2, 0.1], [2, 3, 4], 6
            args.t_end = args.t_end or 4 * (args.dt or SYSTEMS[args.system][1] or 0.25)
        if args.ref <= max(args.shared, default=-1):
            p.error(f"--ref {args.ref} must be a smaller step than every --shared one")
        if args.n < 64 or min(args.eta) <= 0:
            p.error("--n must be at least 64 and every --eta > 0")
        try:
            rows = measure(args)
        except HybridtreeError as exc:      # a setting of --set, a device that is not there
            p.error(str(exc))
    if args.plot:
        if not any(r["what"] in ("block", "shared") for r in rows):
            p.error("--plot: no block or shared runs to draw")
        plot(rows, args.plot, args.cost)
    return rows


if __name__ == "__main__":
    main()
