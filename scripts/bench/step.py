#!/usr/bin/env python
"""Wall seconds per step (a benchmark, not a test), in three modes:

- ``runs`` (issue 17): real ``hybridtree run`` runs, their per-step breakdown, the
  public-API force by the caller's clock, device memory per particle and, on the GPU
  machine, the peer jz-fmm's force and step;
- ``api`` (issue 19): what a Python user waits for with ``hybridtree.Simulation``;
- ``hybrid``: the hybrid tree (n_hard hard steps per soft step) against the normal tree
  code run with the hard step, on one device: the hybrid tree paper's comparison.

    PYTHONPATH=. python scripts/bench/step.py runs --device nvidia --peer --json bench_step.json
    PYTHONPATH=. python scripts/bench/step.py runs --device nvidia --n 67108864 --schemes plain-mono
    PYTHONPATH=. python scripts/bench/step.py runs --quick --device cpu  # smoke run, ~15 s on 2 cores
    PYTHONPATH=. python scripts/bench/step.py api --device nvidia --n 4194304 --steps 16
    PYTHONPATH=. python scripts/bench/step.py api --quick --device cpu   # ~10 s on 2 cores
    PYTHONPATH=. python scripts/bench/step.py hybrid --n 100000 --t-end 0.25   # CPU (2 cores: minutes)
    PYTHONPATH=. python scripts/bench/step.py hybrid --n 1000000 --device nvidia --t-end 0.0625

runs:

Per N: one Plummer sphere (seed 1, Hénon units) written once as an IC file; per scheme
one ``python -m hybridtree run`` child: eps 0.01, theta 0.5, dt 1/512, ``--steps`` steps,
reports every ``--diag-every``, snapshots only at the start and the end.  "step s": the
median ``step_s`` of the reports after step 0 (the last report precedes the last
snapshot); breakdown: medians of ``t_build`` .. ``t_output`` where written (else null).
Hybrid: n_hard 4, r_out = 3 mean core spacings, r_in = r_out / 10 (the hybrid mode's
rule; the config defaults 0.1 / 0.01 make the hard part dominate from 2^22 on: pass
``--r-out 0.1 --r-in 0.01`` for them).  API row: a child calls
``hybridtree.gravity.accelerations`` (tree, monopole), warm-up then best of 3 by the
caller's clock, beside its ``timings``.  Bytes/particle: peak ``nvidia-smi`` memory.used
during a child over the value just before it (CUDA context included) / N; null without
``nvidia-smi``.  ``--peer``: one ``.device/jzfmm_peer.py`` process per N (its own Plummer
sphere, same N and seed: the same kind of particles, not the same ones).  One JSON line
per measurement (``--json`` rewrites its file after each); markdown tables at the end.

api: one Plummer sphere (seed 1, Hénon units); eps 0.01, theta 0.5, dt 1/512, monopole;
construction (device, kernels, first forces), one warm-up step, then ``--steps`` steps in
one ``sim.step`` call by the caller's clock, reading ``sim.pos`` back and ``sim.save``; the
run reports diagnostics only at the end of each call, so ``step_s_diagnostics`` is the
run's own wall per step over the same steps.  One JSON object on stdout per N.

hybrid: both runs integrate the same Plummer sphere (Hénon units) over the same simulated
time with the same theta; the energies are K + 1/2 sum m phi with the full potential.
Prints the hard/soft interaction ratio, T_hybrid / T_normal and both energy errors
(``--json``: one JSON object instead).
"""

from __future__ import annotations

import argparse
import datetime
import json
import math
import os
import shlex
import shutil
import socket
import statistics
import subprocess
import sys
import tempfile
import time
from contextlib import nullcontext
from pathlib import Path

import numpy as np

from common import (CHILD_CWD, ROOT, JsonLines, Sampler, add_device, child_env, commit,
                    core_spacing, fmt, plummer)

DT = 1 / 512
SCHEMES = {"plain-mono": (False, "monopole"), "plain-quad": (False, "quadrupole"),
           "hybrid-mono": (True, "monopole"), "hybrid-quad": (True, "quadrupole")}
BREAKDOWN = ("t_build", "t_walk", "t_transfer", "t_integrate", "t_reduce", "t_output")
PEER = ROOT / ".device" / "jzfmm_peer.py"
_T0 = time.perf_counter()


def num(v) -> float | None:
    """A diagnostics cell or timing as a float; None for empty, NaN or non-numbers."""
    try:
        x = float(v)
    except (TypeError, ValueError):
        return None
    return x if math.isfinite(x) else None


def median(values) -> float | None:
    vals = [v for v in values if v is not None]
    return statistics.median(vals) if vals else None


def child(cmd: list[str], timeout: float, sample: bool) -> dict:
    """Run ``cmd`` (:func:`common.child_env`, outside the checkout), timing its wall clock
    and, with ``sample``, the peak device memory over the baseline just before it (MiB)."""
    base = Sampler.used() if sample else None
    t0 = time.perf_counter()
    with Sampler() if base is not None else nullcontext() as s:
        try:
            r = subprocess.run(cmd, capture_output=True, text=True, timeout=timeout,
                               env=child_env(), cwd=CHILD_CWD)
            rc, out, err = r.returncode, r.stdout, r.stderr.strip().splitlines()[-3:]
        except subprocess.TimeoutExpired:
            rc, out, err = -1, "", [f"over {timeout:.0f} s"]
    res = {"rc": rc, "out": out, "wall_s": time.perf_counter() - t0,
           "error": " | ".join(err)[-600:] if rc else None, "peak_mib": None}
    if s is not None and s.ok:
        res["peak_mib"] = s.peak - base
    return res


def per_particle(peak_mib: float | None, n: int) -> float | None:
    return None if peak_mib is None else peak_mib * 2**20 / n


def run_scheme(n: int, scheme: str, ic: Path, tmp: Path, args) -> dict:
    hybrid, multipole = SCHEMES[scheme]
    out = tmp / f"run_{n}_{scheme}"
    t_end = args.steps * DT
    sets = ["gravity.eps=0.01", "gravity.theta=0.5", f'gravity.multipole="{multipole}"',
            f"time.dt={DT!r}", f"time.t_end={t_end!r}", f"output.snapshot_dt={t_end!r}",
            f"output.diag_every={args.diag_every}", f'output.dir="{out}"',
            f"hybrid.enabled={str(hybrid).lower()}"]
    if hybrid:
        r_out = args.r_out or 3 * core_spacing(n)
        r_in = args.r_in if args.r_in is not None else r_out / 10
        sets += ["hybrid.n_hard=4", f"hybrid.r_out={r_out!r}", f"hybrid.r_in={r_in!r}"]
    sets += list(args.set or [])
    cfg = tmp / "bench.toml"
    cfg.write_text(f'[ics]\nkind = "file"\nfile = "{ic.name}"\n')
    cmd = [sys.executable, "-m", "hybridtree", "run", str(cfg), "--quiet", "--overwrite"]
    cmd += ["--device", args.device] if args.device else []
    for s in sets:
        cmd += ["--set", s]
    c = child(cmd, args.timeout, sample=True)
    row = {"kind": "run", "n": n, "scheme": scheme, "steps": args.steps,
           "wall_s": round(c["wall_s"], 3), "error": c["error"], "peak_mib": c["peak_mib"],
           "bytes_per_particle": per_particle(c["peak_mib"], n), "sets": sets}
    diag = out / "diagnostics.csv"
    if c["rc"] == 0 and diag.exists():
        from hybridtree.analysis.diagnostics import read_diagnostics
        rows = read_diagnostics(diag)
        later = [r for r in rows if num(r.get("step")) and num(r["step"]) > 0]
        row["reports"] = len(later)
        row["step_s"] = median(num(r.get("step_s")) for r in later)
        for k in BREAKDOWN:
            row[k] = median(num(r.get(k)) for r in later)
        row["energy_error"] = num(rows[-1].get("rel_energy_error"))
        force = (row["t_build"] + row["t_walk"]
                 if row["t_build"] is not None and row["t_walk"] is not None else None)
        row["step_over_force"] = (row["step_s"] / force
                                  if force and row["step_s"] is not None else None)
    shutil.rmtree(out, ignore_errors=True)
    return row


def api_child(path: str, device: str | None) -> None:
    """In the child: the public-API force on the IC file's particles, caller's clock."""
    from hybridtree.gravity import accelerations
    from hybridtree.io.snapshot import read_particles
    p = read_particles(path)[0]
    accelerations(p.pos, p.mass, 0.01, method="tree", theta=0.5, device=device)
    best, timings = math.inf, {}
    for _ in range(3):
        t0 = time.perf_counter()
        f = accelerations(p.pos, p.mass, 0.01, method="tree", theta=0.5, device=device)
        t = time.perf_counter() - t0
        if t < best:
            best, timings = t, {k: v for k, v in f.timings.items() if num(v) is not None}
    print(json.dumps({"caller_s": best, "timings": timings}), flush=True)


def run_api(n: int, ic: Path, args) -> dict:
    cmd = [sys.executable, __file__, "runs", "--api-child", str(ic)]
    cmd += ["--device", args.device] if args.device else []
    c = child(cmd, args.timeout, sample=True)
    row = {"kind": "api", "n": n, "wall_s": round(c["wall_s"], 3), "error": c["error"],
           "peak_mib": c["peak_mib"], "bytes_per_particle": per_particle(c["peak_mib"], n)}
    if c["rc"] == 0 and c["out"].strip():
        r = json.loads(c["out"].splitlines()[-1])
        t = r["timings"]
        parts = [k for k in ("upload", "build", "walk", "download") if k in t]
        row.update(caller_s=r["caller_s"], internal_total_s=t.get("total"), timings=t,
                   timing_keys=sorted(t), ratio_of=parts)
        row["ratio"] = (r["caller_s"] / sum(t[k] for k in parts)
                        if {"build", "walk"} <= set(parts) else None)
    return row


def run_peer(n: int, args) -> dict:
    row = {"kind": "peer", "n": n}
    if not PEER.exists():
        return {**row, "error": f"skipped: {PEER} missing (bash ../shared/peers/prepare.sh)"}
    cmd = [sys.executable, str(PEER), "--n", str(n), "--step-n", str(n), "--configs",
           args.peer_configs, "--no-direct-check", "--no-split", "--reps", "3"]
    c = child(cmd, args.timeout, sample=False)
    if c["error"] and "memset node" in c["error"] and "XLA_FLAGS" not in os.environ:
        os.environ["XLA_FLAGS"] = "--xla_gpu_enable_command_buffer="   # jz-fmm known issue
        c = child(cmd, args.timeout, sample=False)
    recs = [json.loads(line) for line in c["out"].splitlines() if line.startswith("{")]
    by = {r.get("case"): r for r in recs}
    force = by.get("force_selected") or by.get("force") or {}
    errors = [f"{r.get('case')}: {r['error'][:200]}" for r in recs if r.get("error")]
    return {**row, "wall_s": round(c["wall_s"], 3), "error": "; ".join(errors) or c["error"],
            "force_s": force.get("t_force_s"), "median": force.get("median"),
            "p99": force.get("p99"), "p": force.get("settings", {}).get("p"),
            "theta": force.get("settings", {}).get("theta"),
            "step_s": by.get("step_kdk_simulate", {}).get("t_step_s"),
            "step_timestep_s": by.get("step_kdk_timestep", {}).get("t_step_s"),
            "records": recs}


def write_ic(n: int, seed: int, tmp: Path) -> tuple[Path, dict]:
    from hybridtree.config import SCHEMA
    from hybridtree.io.snapshot import write_snapshot
    from hybridtree.particles import Particles
    from hybridtree.config.units import Units
    t0 = time.perf_counter()
    pos, vel, mass = plummer(n, seed)
    t1 = time.perf_counter()
    path = tmp / f"ic_{n}.hdf5"
    units = Units(SCHEMA["units"]["length_cm"].default, SCHEMA["units"]["mass_g"].default)
    write_snapshot(path, Particles(pos, vel, mass, np.arange(1, n + 1, dtype=np.uint64)),
                   0.0, units, overwrite=True)
    return path, {"kind": "ic", "n": n, "seed": seed, "plummer_s": round(t1 - t0, 3),
                  "write_s": round(time.perf_counter() - t1, 3),
                  "mb": round(path.stat().st_size / 1e6, 1)}


def header(args) -> dict:
    from hybridtree.device.choice import choose_device      # no context: no device memory held
    try:
        label = choose_device(args.device).label
    except Exception as exc:                         # noqa: BLE001 (reported, not fatal)
        label = f"? ({exc})"
    return {"kind": "header", "date": datetime.datetime.now().isoformat(timespec="seconds"),
            "host": socket.gethostname(), "device": label, "commit": commit(),
            "command": shlex.join([Path(sys.executable).name] + sys.argv),
            "steps": args.steps, "diag_every": args.diag_every, "dt": DT, "eps": 0.01,
            "theta": 0.5}


def tables(rows: list[dict]) -> None:
    print("\n| N | scheme | step s | build | walk | transfer | integrate | reduce | output "
          "| step/(build+walk) | bytes/particle |\n|---|---|---|---|---|---|---|---|---|---|---|")
    for r in (r for r in rows if r["kind"] == "run"):
        cells = [fmt(r.get(k)) for k in ("step_s",) + BREAKDOWN]
        print(f"| {r['n']} | {r['scheme']} | " + " | ".join(cells) +
              f" | {fmt(r.get('step_over_force'), '.2f')} | {fmt(r['bytes_per_particle'], '.0f')} |"
              + (f" error: {r['error'][:100]}" if r.get("error") else ""))
    print("\n| N | public API caller s | internal total s | caller / (build+walk+download) |"
          "\n|---|---|---|---|")
    for r in (r for r in rows if r["kind"] == "api"):
        print(f"| {r['n']} | {fmt(r.get('caller_s'))} | {fmt(r.get('internal_total_s'))} | "
              f"{fmt(r.get('ratio'), '.2f')} |" + (f" error: {r['error'][:100]}" if r.get("error") else ""))
    peers = [r for r in rows if r["kind"] == "peer"]
    if any(r.get("force_s") or r.get("step_s") for r in peers):
        ours = {(r["n"], r.get("scheme", "api")): r for r in rows if r["kind"] in ("run", "api")}
        print("\n| N | jz-fmm force s | jz-fmm step s | p, theta | median | p99 | our API force s "
              "| our plain-mono step s |\n|---|---|---|---|---|---|---|---|")
        for r in peers:
            print(f"| {r['n']} | {fmt(r.get('force_s'))} | {fmt(r.get('step_s'))} | "
                  f"{r.get('p')}, {r.get('theta')} | {fmt(r.get('median'), '.2e')} | "
                  f"{fmt(r.get('p99'), '.2e')} | {fmt(ours.get((r['n'], 'api'), {}).get('caller_s'))} | "
                  f"{fmt(ours.get((r['n'], 'plain-mono'), {}).get('step_s'))} |")


def main_runs(argv: list[str]) -> None:
    p = argparse.ArgumentParser(description="step.py runs: real `hybridtree run` steps")
    add_device(p)
    p.add_argument("--n", type=int, nargs="+", help="default 2^20 2^22 2^24")
    p.add_argument("--schemes", nargs="+", choices=list(SCHEMES), help="default: all four")
    p.add_argument("--steps", type=int, help="steps per run (default 24)")
    p.add_argument("--diag-every", type=int, help="steps between reports (default 8)")
    p.add_argument("--seed", type=int, default=1)
    p.add_argument("--set", action="append", metavar="KEY=VALUE",
                   help="one more setting of every run (e.g. gravity.opening='\"relative\"')")
    p.add_argument("--r-out", type=float, help="hybrid r_out (default 3 core spacings)")
    p.add_argument("--r-in", type=float, help="hybrid r_in (default r_out / 10)")
    p.add_argument("--peer", action="store_true", help="jz-fmm too (.device/jzfmm_peer.py)")
    p.add_argument("--peer-configs", default="5:0.8", help="jz-fmm p:theta list (default: "
                   "its library default)")
    p.add_argument("--timeout", type=float, default=300, help="seconds per child process")
    p.add_argument("--tmp", help="folder for the IC files and runs (default: system temp)")
    p.add_argument("--quick", action="store_true", help="CPU smoke run: N = 16384, 6 steps, "
                   "reports every 2, plain-mono and hybrid-mono, no peer")
    p.add_argument("--json", metavar="PATH")
    p.add_argument("--api-child", help=argparse.SUPPRESS)
    args = p.parse_args(argv)
    if args.api_child:
        api_child(args.api_child, args.device)
        return
    q = args.quick
    args.n = args.n or ([16384] if q else [1 << 20, 1 << 22, 1 << 24])
    args.steps = args.steps or (6 if q else 24)
    args.diag_every = args.diag_every or (2 if q else 8)
    args.schemes = args.schemes or (["plain-mono", "hybrid-mono"] if q else list(SCHEMES))
    args.peer = args.peer and not q
    head = header(args)
    print(f"# {head['date']}  {head['host']}  device {head['device']}  commit {head['commit']}\n"
          f"# {head['command']}", flush=True)
    out = JsonLines(args.json, lambda rows: {"header": head, "rows": rows})
    rows, emit = out.rows, out.emit
    emit(head)
    if args.tmp:
        Path(args.tmp).mkdir(parents=True, exist_ok=True)
    tmp = Path(tempfile.mkdtemp(prefix="bench_step_", dir=args.tmp)).resolve()
    try:
        for n in args.n:
            ic, rec = write_ic(n, args.seed, tmp)
            print(f"# N = {n}: Plummer sphere {rec['plummer_s']:.1f} s (one core), IC file "
                  f"{rec['mb']} MB written in {rec['write_s']:.1f} s", flush=True)
            emit(rec)
            for scheme in args.schemes:
                emit(run_scheme(n, scheme, ic, tmp, args))
            emit(run_api(n, ic, args))
            print(f"# timing keys of accelerations(): {rows[-1].get('timing_keys')}")
            if args.peer:
                emit(run_peer(n, args))
                if not PEER.exists():
                    print(f"# jz-fmm peer skipped: {rows[-1]['error']}", flush=True)
            ic.unlink()
            print(f"# {time.perf_counter() - _T0:.0f} s into the run", flush=True)
    finally:
        shutil.rmtree(tmp, ignore_errors=True)
    tables([r for r in rows if r["kind"] != "header"])


# -- api: hybridtree.Simulation by the caller's clock ----------------------------------------

def measure_api(n: int, steps: int, device: str | None, multipole: str) -> dict:
    import hybridtree
    pos, vel, mass = plummer(n, seed=1)
    t0 = time.perf_counter()
    sim = hybridtree.Simulation(pos, vel, mass, dt=1 / 512, eps=0.01, theta=0.5,
                                multipole=multipole, device=device or "", quiet=True,
                                diag_every=1 << 30)
    t_make = time.perf_counter() - t0
    sim.step(1)                           # warm-up: lazily built kernels, buffer growth
    t0 = time.perf_counter()
    sim.step(steps)
    t_steps = time.perf_counter() - t0
    t0 = time.perf_counter()
    x = sim.pos
    t_pos = time.perf_counter() - t0
    with tempfile.TemporaryDirectory() as tmp_dir:
        t0 = time.perf_counter()
        sim.save(Path(tmp_dir) / "state.hdf5")
        t_save = time.perf_counter() - t0
    d = sim.diagnostics
    return {"n": n, "steps": steps, "device": repr(sim).split(" on ", 1)[1].rstrip(">"),
            "multipole": multipole, "make_s": round(t_make, 4),
            "step_s_caller": round(t_steps / steps, 5),
            "step_s_diagnostics": round(float(d["step_s"][-1]), 5),
            "pos_s": round(t_pos, 4), "save_s": round(t_save, 4),
            "energy_error": float(sim.energy_error), "finite": bool(np.isfinite(x).all())}


def main_api(argv: list[str]) -> None:
    ap = argparse.ArgumentParser(description="step.py api: hybridtree.Simulation's steps")
    ap.add_argument("--n", type=int, nargs="+", default=[1 << 20])
    ap.add_argument("--steps", type=int, default=16)
    add_device(ap)
    ap.add_argument("--multipole", default="monopole", choices=("monopole", "quadrupole"))
    ap.add_argument("--quick", action="store_true", help="N = 20000, 4 steps")
    args = ap.parse_args(argv)
    if args.quick:
        args.n, args.steps = [20000], 4
    for n in args.n:
        print(json.dumps(measure_api(n, args.steps, args.device, args.multipole)), flush=True)



# -- hybrid: hybrid tree against the normal tree ---------------------------------------------

def energy(state) -> float:
    m = state.moments()
    return m["kinetic"] + m["potential"]


def stepper(g, p, backend: str):
    """(state, scheme, engine, clock) of a run of Particles ``p`` with GravitySettings
    ``g``, forces at the start computed.  Internals: the hybrid mode reads the engine's
    clock and counts per part, which the public API does not show."""
    from hybridtree.device.choice import get_runtime
    from hybridtree.device.clock import Clock
    from hybridtree.gravity.engine import ForceEngine
    from hybridtree.integrate.choose import scheme_for
    from hybridtree.state import make_state
    rt = get_runtime(g.device or None)
    clock = Clock(rt)
    state = make_state(p, g.parts, backend, rt, clock)
    engine = ForceEngine(g, rt, clock)
    scheme = scheme_for(g, engine)
    scheme.start(state)
    return state, scheme, engine, clock


def main_hybrid(argv: list[str]) -> None:
    ap = argparse.ArgumentParser(description="step.py hybrid: hybrid against normal tree")
    ap.add_argument("-n", "--n", type=int, default=100_000)
    ap.add_argument("--theta", type=float, default=0.5)
    ap.add_argument("--eps", type=float, default=0.01)
    ap.add_argument("--multipole", default="monopole")
    ap.add_argument("--dt-hard", type=float, default=1 / 256)
    ap.add_argument("--n-hard", type=int, default=4)
    ap.add_argument("--t-end", type=float, default=0.25)
    ap.add_argument("--r-out", type=float, default=None,
                    help="default: 3 x the mean interparticle distance in the core")
    ap.add_argument("--r-in", type=float, default=None, help="default: r_out / 10")
    ap.add_argument("--changeover", default="dll")
    add_device(ap)
    ap.add_argument("--seed", type=int, default=1)
    ap.add_argument("--build", choices=("device", "host"), default="device",
                    help="where the tree is built")
    ap.add_argument("--host-steps", action="store_true",
                    help="the state on the host (default: on the device where it can be)")
    ap.add_argument("--json", action="store_true")
    a = ap.parse_args(argv)
    from hybridtree.device.choice import get_runtime
    from hybridtree.gravity.engine import GravitySettings
    from hybridtree.gravity.splitting import Changeover
    from hybridtree.state import state_backend
    from hybridtree.particles import Particles
    r_out = a.r_out or 3 * core_spacing(a.n)
    r_in = a.r_in if a.r_in is not None else r_out / 10
    co = Changeover(r_in, r_out, a.changeover)
    pos0, vel0, m = plummer(a.n, seed=a.seed)
    kw = dict(eps=a.eps, theta=a.theta, multipole=a.multipole, device=a.device or "",
              build=a.build)
    dt_soft = a.dt_hard * a.n_hard
    n_soft = round(a.t_end / dt_soft)

    p0 = Particles(pos0, vel0, m, np.arange(1, a.n + 1, dtype=np.uint64))
    normal_g = GravitySettings(**kw)
    hybrid_g = GravitySettings(**kw, changeover=co, n_hard=a.n_hard)
    rt = get_runtime(a.device)
    backend = "host" if a.host_steps else state_backend(rt, "tree", a.build)
    for g, dt in ((normal_g, a.dt_hard), (hybrid_g, dt_soft)):      # build the kernels first
        state, scheme, _, _ = stepper(g, p0, backend)
        scheme.step(state, dt)

    results = {}
    for name, g, dt, steps in (("normal", normal_g, a.dt_hard, n_soft * a.n_hard),
                               ("hybrid", hybrid_g, dt_soft, n_soft)):
        state, scheme, engine, clock = stepper(g, p0, backend)
        e0 = energy(state)
        before, counts0 = clock.snapshot(), dict(engine.counts)
        rt.queue.finish()
        t0 = time.perf_counter()
        for _ in range(steps):
            scheme.step(state, dt)
        rt.queue.finish()
        wall = time.perf_counter() - t0
        sec = {k: v - before.get(k, 0.0) for k, v in clock.snapshot().items()}
        cnt = {k: v - counts0.get(k, 0) for k, v in engine.counts.items()}
        results[name] = (wall, (energy(state) - e0) / abs(e0), sec, cnt)
    (t_normal, err_normal, nsec, ncnt), (t_hybrid, err_hybrid, hsec, hcnt) = (
        results["normal"], results["hybrid"])

    def per(sec, cnt, walk, part):
        return sec.get(walk, 0.0) / max(cnt.get(f"{part}_forces", 0), 1)

    res = {
        "n": a.n, "device": rt.info.label, "build": a.build, "theta": a.theta, "eps": a.eps,
        "multipole": a.multipole, "r_in": r_in, "r_out": r_out, "changeover": a.changeover,
        "n_hard": a.n_hard, "dt_hard": a.dt_hard, "state": backend,
        "t_end": n_soft * dt_soft,
        "normal_steps": n_soft * a.n_hard, "soft_steps": n_soft,
        "t_normal_s": t_normal, "t_hybrid_s": t_hybrid, "time_ratio": t_hybrid / t_normal,
        "normal_force_s": per(nsec, ncnt, "walk_full", "full"),
        "hard_force_s": per(hsec, hcnt, "walk_hard", "hard"),
        "soft_force_s": per(hsec, hcnt, "walk_soft", "soft"),
        "build_s_per_tree_normal": nsec.get("build", 0.0) / max(ncnt.get("full_forces", 0), 1),
        "hard_interactions": hcnt.get("hard_interactions", 0) / max(hcnt.get("hard_forces", 0), 1),
        "soft_interactions": hcnt.get("soft_interactions", 0) / max(hcnt.get("soft_forces", 0), 1),
        "normal_interactions": ncnt.get("full_interactions", 0) / max(ncnt.get("full_forces", 0), 1),
        "energy_error_normal": err_normal, "energy_error_hybrid": err_hybrid,
    }
    res["hard_soft_ratio"] = res["hard_interactions"] / res["soft_interactions"]
    if a.json:
        print(json.dumps(res))
        return
    print(f"N = {a.n} on {res['device']}: theta {a.theta}, eps {a.eps}, r_in {r_in:.4g}, "
          f"r_out {r_out:.4g} ({a.changeover}), dt_hard {a.dt_hard}, n_hard {a.n_hard}, "
          f"t = {res['t_end']}")
    print(f"interactions per force: normal {res['normal_interactions']:.4g}, "
          f"hybrid soft {res['soft_interactions']:.4g}, hard {res['hard_interactions']:.4g} "
          f"(hard/soft {res['hard_soft_ratio']:.3f})")
    print(f"time per force: normal {res['normal_force_s']:.4f} s, hard {res['hard_force_s']:.4f} s, "
          f"soft {res['soft_force_s']:.4f} s (tree build {res['build_s_per_tree_normal']:.4f} s)")
    print(f"T_normal {t_normal:.2f} s ({res['normal_steps']} steps), T_hybrid {t_hybrid:.2f} s "
          f"({n_soft} soft steps): T_hybrid / T_normal = {res['time_ratio']:.3f}")
    print(f"energy error: normal {err_normal:+.3e}, hybrid {err_hybrid:+.3e}")



MODES = {"runs": main_runs, "api": main_api, "hybrid": main_hybrid}


def main(argv: list[str] | None = None) -> None:
    argv = sys.argv[1:] if argv is None else list(argv)
    if not argv or argv[0] not in MODES:
        raise SystemExit(f"usage: step.py {{{','.join(MODES)}}} [options]; -h after a mode "
                         "for its options")
    MODES[argv[0]](argv[1:])


if __name__ == "__main__":
    main()
