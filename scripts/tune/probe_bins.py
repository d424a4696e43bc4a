#!/usr/bin/env python
"""Issue 57's investigation (not a test, not part of the package): where the block steps'
energy error comes from, on the cusp (Hernquist halo with a satellite) on the CPU device.

    PYTHONPATH=. HYBRIDTREE_STATE=host python scripts/tune/probe_bins.py --n 16384 --t-end 0.5 \
        --json /tmp/probe.jsonl

Runs, each to --t-end with largest step --dt (eps --eps), the caller's clock around
``Simulation`` and ``evolve``, and the work as forces per particle (independent of the
machine's load):
- shared steps dt / 2^k (--shared);
- block steps at each --eta as the code does them (``plain``);
- ``deepest``: each particle held in the deepest bin it reached in the plain run of that η
  for the whole run (recorded in a first pass): the error the bins' changes cause;
- ``jump1``: a particle moves up (to a larger step) by at most one bin per synchronisation;
- ``predict``: the bin of |a| extrapolated linearly one step ahead from the particle's
  last two synchronisations (no extra force);
- ``ratchet``: a particle's bin never decreases (what ``deepest`` does, without knowing
  the future);
- ``vel``: the bin also obeys dt <= eta_v eps / |v| (a step crosses at most eta_v
  softening lengths: the particles that pass through a softened centre, where |a| -> 0);
- ``hyst``: a particle moves up only as far as the criterion at eta / 2 allows (a margin
  of 2 in dt: hysteresis against moving up too early);
- ``dyn``: the bin also obeys dt <= eta_dyn / sqrt(G rho(<r)) (Zemp et al. 2007's
  dynamical time from the mean density inside the particle's radius about the origin,
  the halo's centre): near the softened centre |a| -> 0 gives the acceleration criterion's
  largest steps while the local dynamical time is shortest;
- ``centre``: the particles within --r-centre of the origin held at least in the bin of
  the deepest particle there (a test of "the centre alone").
The rules are put in by wrapping HostBins.assign (host state only: HYBRIDTREE_STATE=host).
"""

from __future__ import annotations

import argparse
import json
import math
import os
import sys
import time
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

import hybridtree  # noqa: E402
from hybridtree.ics import hernquist_satellite  # noqa: E402
from hybridtree.integrate import timebins  # noqa: E402

ORIGINAL = timebins.HostBins.assign
RULE: dict = {}


def q_bins(self, rows, q0, lam, acc):
    """q = q0 |a| of ``rows`` (HostBins.assign's)."""
    a = (self.state.acc["full"] if acc is None else acc)[rows] + lam * self.state.pos[rows]
    return q0 * np.sqrt((a[:, 0] * a[:, 0] + a[:, 1] * a[:, 1]) + a[:, 2] * a[:, 2])


def assign(self, kmin, kmax, q0, lam, scale=None, acc=None, qv=0.0):
    old = self.bins.copy()
    ORIGINAL(self, kmin, kmax, q0, lam, scale, acc, qv=qv)
    rows = np.flatnonzero(old >= kmin)
    k = self.bins[rows].astype(np.int64)
    name = RULE.get("name", "plain")
    if name == "deepest":
        k = np.maximum(k, RULE["deep"][rows])
    elif name == "jump1":
        k = np.maximum(k, old[rows] - 1)
    elif name == "predict":
        # the bin of |a| extrapolated one step ahead from the particle's last two
        # synchronisations (no new force): a particle falling in takes its smaller step
        # before it gets there, not one step late
        now = np.sqrt(q_bins(self, rows, 1.0, lam, acc) ** 2)
        prev = RULE.setdefault("a_prev", np.full(len(self.bins), np.nan))
        ahead = np.where(np.isnan(prev[rows]), now, np.maximum(now, 2 * now - prev[rows]))
        prev[rows] = now
        q = q0 * ahead
        k_pred = np.ceil(np.log2(np.maximum(q, 1.0)) / 2).astype(np.int64)
        k = np.maximum(k, k_pred)
    elif name == "sym":
        # a time-symmetrised criterion (Pelupessy et al. 2012's explicit form): the step
        # h <= tau / (1 - tau'/2) with tau' = d tau / dt from the particle's last two
        # forces (its step just closed: dt / 2^old), so that the step chosen at its start
        # is about the mean of the criterion at its two ends, going in and coming out alike
        dt_max = RULE["dt"]
        q = np.maximum(q_bins(self, rows, q0, lam, acc), 1e-300)
        tau = dt_max / np.sqrt(q)
        prev = RULE.setdefault("tau_prev", np.full(len(self.bins), np.nan))
        h_old = dt_max / 2.0 ** old[rows]
        slope = np.clip((tau - prev[rows]) / h_old, -RULE.get("clip", 1.0), RULE.get("clip", 1.0))
        slope = np.where(np.isnan(slope), 0.0, slope)
        prev[rows] = tau
        # w = 2 with a slope at its clip (+1) leaves no denominator: the largest step
        den = 1.0 - 0.5 * RULE.get("w", 1.0) * slope
        h = np.divide(tau, den, out=np.full_like(tau, np.inf), where=den > 0)
        k = np.ceil(np.log2(np.maximum(dt_max / h, 1.0))).astype(np.int64)
    elif name == "ratchet":
        k = np.maximum(k, old[rows])          # never up: a bin only deepens
    elif name == "vel":
        # dt <= eta_v eps / |v|: a step crosses at most eta_v softening lengths
        v = np.linalg.norm(self.state.vel[rows], axis=1)
        dt_max = math.sqrt(q0 * RULE["eta"] ** 2 * RULE["eps"])
        ratio = dt_max * v / (RULE["eta_v"] * RULE["eps"])
        k = np.maximum(k, np.ceil(np.log2(np.maximum(ratio, 1.0))).astype(np.int64))
    elif name == "hyst":
        # up only as far as the criterion at eta / 2^h allows (the bin of q 4^h): a
        # particle leaves its bin for a larger step only with a margin
        h = RULE.get("margin", 1)
        strict = np.where(q_bins(self, rows, q0, lam, acc) > 4.0 ** -h, k + h, 0)
        k = np.where(k < old[rows], np.minimum(old[rows], np.maximum(k, strict)), k)
    elif name == "dyn":
        pos = self.state.pos
        r = np.linalg.norm(pos, axis=1)
        order = np.argsort(r)
        m_in = np.empty(len(r))
        m_in[order] = np.cumsum(self.state.mass[order])
        rho = 3 * m_in[rows] / (4 * math.pi * np.maximum(r[rows], RULE["eps"]) ** 3)
        dt_max = math.sqrt(q0 * RULE["eta"] ** 2 * RULE["eps"])
        dt_dyn = RULE["eta_dyn"] / np.sqrt(rho)
        k = np.maximum(k, np.ceil(np.log2(np.maximum(dt_max / dt_dyn, 1.0))).astype(np.int64))
    elif name == "centre":
        inner = np.linalg.norm(self.state.pos[rows], axis=1) < RULE["r_centre"]
        if inner.any():
            k[inner] = max(k[inner].max(), 0)
    k = np.clip(np.maximum(k, kmin), 0, kmax)
    self.bins[rows] = k.astype(np.int32)
    if "record" in RULE:
        np.maximum(RULE["record"], self.bins, out=RULE["record"])


def run(args, pos, vel, mass, settings: dict) -> dict:
    t0 = time.perf_counter()
    sim = hybridtree.Simulation(pos, vel, mass, quiet=True, settings={
        "gravity.eps": args.eps, "gravity.device": args.device, "output.diag_every": 1,
        **settings})
    sim.evolve(args.t_end)
    wall = time.perf_counter() - t0
    err = sim.diagnostics["rel_energy_error"]
    bins = sim.timebins()
    forces = sum(b["forces"] for b in bins) if bins else sim.steps * len(mass)
    out = {"wall_s": wall, "energy_error": float(sim.energy_error),
           "energy_error_max": float(np.nanmax(np.abs(err))),
           "forces_per_particle": forces / len(mass), "pos": sim.pos.copy()}
    if bins:
        out["bins"] = {b["bin"]: b["particles"] for b in bins if b["particles"]}
    sim.close()
    return out


def plot(paths: list[str], out: str) -> None:
    """Largest |dE/E| against forces per particle: shared runs, and block runs per rule."""
    import matplotlib
    matplotlib.use("Agg")
    import matplotlib.pyplot as plt
    rows = [json.loads(line) for p in paths for line in Path(p).read_text().splitlines()]
    fig, ax = plt.subplots(figsize=(6.4, 4.4))
    groups: dict = {}
    for r in rows:
        if r["what"] == "reference":
            continue
        key = "shared" if r["what"] == "shared" else r["rule"] + "".join(
            f" {k}={r[k]:g}" for k in ("eta_dyn", "eta_v") if k in r)
        if all(q.get("eta") != r.get("eta") or q.get("k") != r.get("k")
               for q in groups.get(key, [])):       # a rule's run repeated in two files
            groups.setdefault(key, []).append(r)
    for c, (key, rs) in enumerate(sorted(groups.items())):
        rs.sort(key=lambda r: r["forces_per_particle"])
        ax.loglog([r["forces_per_particle"] for r in rs], [r["energy_error_max"] for r in rs],
                  "s--" if key == "shared" else "o-",
                  color="k" if key == "shared" else plt.cm.tab20(c % 20),
                  label=key, lw=2.5 if key in ("plain", "shared") else 1.2)
        for r in rs:
            ax.annotate(f"Δt/{2 ** r['k']}" if key == "shared" else f"η={r['eta']:g}",
                        (r["forces_per_particle"], r["energy_error_max"]),
                        textcoords="offset points", xytext=(3, 3), fontsize=6)
    ax.set_xlabel("forces per particle (all substeps)")
    ax.set_ylabel("largest |ΔE/E| over the run")
    ax.grid(True, which="both", alpha=0.3)
    ax.legend(fontsize=7)
    fig.tight_layout()
    fig.savefig(out, dpi=110)


def cusp_options(p: argparse.ArgumentParser, n: int, t_end: float) -> None:
    """The cusp's options of the probes (this one and probe_hold.py): --n, --seed, --eps,
    --dt (the largest step), --t-end."""
    p.add_argument("--n", type=int, default=n)
    p.add_argument("--seed", type=int, default=1)
    p.add_argument("--eps", type=float, default=0.005)
    p.add_argument("--dt", type=float, default=1 / 16)
    p.add_argument("--t-end", type=float, default=t_end)


def main(argv=None) -> None:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    cusp_options(p, 16384, 0.5)
    p.add_argument("--device", default="cpu")
    p.add_argument("--eta", type=float, nargs="+", default=[0.4, 0.2, 0.1])
    p.add_argument("--eta-dyn", type=float, nargs="+", default=[0.1, 0.05])
    p.add_argument("--eta-v", type=float, nargs="+", default=[4.0, 2.0])
    p.add_argument("--r-centre", type=float, default=0.05)
    p.add_argument("--margin", type=int, nargs="+", default=[1],
                   help="hyst: the bins of margin (a step 2^margin larger than the criterion's)")
    p.add_argument("--sym-w", type=float, nargs="+", default=[1.0],
                   help="sym: the weight of the criterion's slope (1: the two ends' mean)")
    p.add_argument("--ref-cache", help="an .npy file of the converged run's positions "
                   "(written if missing, read if there: the same --n, --seed, --t-end, --ref)")
    p.add_argument("--rules", nargs="+", default=["plain", "deepest", "jump1", "ratchet", "hyst", "vel", "dyn", "centre"])
    p.add_argument("--shared", type=int, nargs="*", default=[2, 3, 4, 5])
    p.add_argument("--ref", type=int, default=7)
    p.add_argument("--json")
    p.add_argument("--plot", nargs="+", metavar="FILE",
                   help="JSONL1 [JSONL2 ...] PNG: draw earlier --json files, run nothing")
    args = p.parse_args(argv)
    if args.plot:
        plot(args.plot[:-1], args.plot[-1])
        return
    if os.environ.get("HYBRIDTREE_STATE") != "host":
        sys.exit("run with HYBRIDTREE_STATE=host (the rules wrap the host state's bins)")
    timebins.HostBins.assign = assign
    pos, vel, mass = hernquist_satellite(args.n, seed=args.seed)
    rows = []

    def emit(row: dict, x: np.ndarray) -> None:
        row["pos_error"] = float(np.median(np.linalg.norm(x - ref, axis=1)))
        rows.append(row)
        print(json.dumps(row), flush=True)
        if args.json:
            Path(args.json).write_text("".join(json.dumps(r) + "\n" for r in rows))

    run(args, *hernquist_satellite(2048, seed=9), {"time.dt": args.dt})     # kernels
    if args.ref_cache and Path(args.ref_cache).is_file():
        ref = np.load(args.ref_cache)
    else:
        r = run(args, pos, vel, mass, {"time.dt": args.dt / 2 ** args.ref})
        ref = r.pop("pos")
        emit({"what": "reference", "k": args.ref, **r}, ref)
        if args.ref_cache:
            np.save(args.ref_cache, ref)
    for k in args.shared:
        r = run(args, pos, vel, mass, {"time.dt": args.dt / 2 ** k})
        x = r.pop("pos")
        emit({"what": "shared", "k": k, **r}, x)
    block = {"time.stepping": "block", "time.dt": args.dt, "time.max_bin": 12}
    for eta in args.eta:
        RULE.clear()
        RULE.update(name="plain", record=np.zeros(args.n, np.int64))
        r = run(args, pos, vel, mass, {**block, "time.eta": eta})
        deep = RULE["record"].copy()
        x = r.pop("pos")
        emit({"what": "block", "rule": "plain", "eta": eta, **r}, x)
        for name in args.rules:
            variants = [{"eta_dyn": e} for e in args.eta_dyn] if name == "dyn" else \
                [{"w": w} for w in args.sym_w] if name == "sym" else \
                [{"margin": m} for m in args.margin] if name == "hyst" else \
                [{"eta_v": e} for e in args.eta_v] if name == "vel" else [{}]
            for extra in variants if name != "plain" else []:
                RULE.clear()
                RULE.update(name=name, deep=deep, eps=args.eps, eta=eta, dt=args.dt,
                            r_centre=args.r_centre, **extra)
                r = run(args, pos, vel, mass, {**block, "time.eta": eta})
                x = r.pop("pos")
                emit({"what": "block", "rule": name, "eta": eta, **extra, **r}, x)


if __name__ == "__main__":
    main()
