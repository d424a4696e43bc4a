#!/usr/bin/env python
"""Issue 17's benchmark (not a test): wall seconds per step of real ``hybridtree run``
runs, their per-step breakdown, the public-API force by the caller's clock, device
memory per particle and, on the GPU machine, the peer jz-fmm's force and step.

    PYTHONPATH=. python scripts/bench_step.py --device nvidia --peer --json bench_step.json
    PYTHONPATH=. python scripts/bench_step.py --device nvidia --n 67108864 --schemes plain-mono
    PYTHONPATH=. python scripts/bench_step.py --quick --device cpu     # smoke run, ~15 s on 2 cores

Per N: one Plummer sphere (seed 1, Hénon units) written once as an IC file; per scheme
one ``python -m hybridtree run`` child: eps 0.01, theta 0.5, dt 1/512, ``--steps`` steps,
reports every ``--diag-every``, snapshots only at the start and the end.  "step s": the
median ``step_s`` of the reports after step 0 (the last report precedes the last
snapshot); breakdown: medians of ``t_build`` .. ``t_output`` where written (else null).
Hybrid: n_hard 4, r_out = 3 mean core spacings, r_in = r_out / 10 (bench_hybrid.py's
rule; the config defaults 0.1 / 0.01 make the hard part dominate from 2^22 on: pass
``--r-out 0.1 --r-in 0.01`` for them).  API row: a child calls
``hybridtree.gravity.accelerations`` (tree, monopole), warm-up then best of 3 by the
caller's clock, beside its ``timings``.  Bytes/particle: peak ``nvidia-smi`` memory.used
during a child over the value just before it (CUDA context included) / N; null without
``nvidia-smi``.  ``--peer``: one ``.device/jzfmm_peer.py`` process per N (its own Plummer
sphere, same N and seed: the same kind of particles, not the same ones).  One JSON line
per measurement (``--json`` rewrites its file after each); markdown tables at the end.
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

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT / "scripts"))
from bench_memory import Sampler  # noqa: E402

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


def core_spacing(n: int) -> float:
    """Mean interparticle distance in the core of a Plummer sphere (Hénon units)."""
    return (n * 3 / (4 * math.pi * (3 * math.pi / 16) ** 3)) ** (-1 / 3)


def emit(row: dict, rows: list, args, header: dict) -> None:
    rows.append(row)
    print(json.dumps(row), flush=True)
    if args.json:
        Path(args.json).write_text(json.dumps({"header": header, "rows": rows}, indent=1))


def child(cmd: list[str], timeout: float, sample: bool) -> dict:
    """Run ``cmd`` (repository on PYTHONPATH), timing its wall clock and, with ``sample``,
    the peak device memory over the baseline just before it (MiB)."""
    env = dict(os.environ, PYTHONPATH=os.pathsep.join(
        [str(ROOT)] + [p for p in [os.environ.get("PYTHONPATH")] if p]))
    base = Sampler.used() if sample else None
    t0 = time.perf_counter()
    with Sampler() if base is not None else nullcontext() as s:
        try:
            r = subprocess.run(cmd, capture_output=True, text=True, timeout=timeout, env=env)
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
    cmd = [sys.executable, __file__, "--api-child", str(ic)]
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
    import numpy as np

    from hybridtree.config import SCHEMA
    from hybridtree.ics import plummer
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
    try:
        commit = subprocess.run(["git", "rev-parse", "--short", "HEAD"], cwd=ROOT,
                                capture_output=True, text=True).stdout.strip() or "?"
    except OSError:
        commit = "?"
    return {"kind": "header", "date": datetime.datetime.now().isoformat(timespec="seconds"),
            "host": socket.gethostname(), "device": label, "commit": commit,
            "command": shlex.join([Path(sys.executable).name] + sys.argv),
            "steps": args.steps, "diag_every": args.diag_every, "dt": DT, "eps": 0.01,
            "theta": 0.5}


def fmt(x, spec: str = ".4f") -> str:
    return "-" if x is None else format(x, spec)


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


def main(argv: list[str] | None = None) -> None:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--device", default=None, help="OpenCL device (nvidia, cpu, ...)")
    p.add_argument("--n", type=int, nargs="+", help="default 2^20 2^22 2^24")
    p.add_argument("--schemes", nargs="+", choices=list(SCHEMES), help="default: all four")
    p.add_argument("--steps", type=int, help="steps per run (default 24)")
    p.add_argument("--diag-every", type=int, help="steps between reports (default 8)")
    p.add_argument("--seed", type=int, default=1)
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
    rows: list[dict] = []
    emit(head, rows, args, head)
    if args.tmp:
        Path(args.tmp).mkdir(parents=True, exist_ok=True)
    tmp = Path(tempfile.mkdtemp(prefix="bench_step_", dir=args.tmp))
    try:
        for n in args.n:
            ic, rec = write_ic(n, args.seed, tmp)
            print(f"# N = {n}: Plummer sphere {rec['plummer_s']:.1f} s (one core), IC file "
                  f"{rec['mb']} MB written in {rec['write_s']:.1f} s", flush=True)
            emit(rec, rows, args, head)
            for scheme in args.schemes:
                emit(run_scheme(n, scheme, ic, tmp, args), rows, args, head)
            emit(run_api(n, ic, args), rows, args, head)
            print(f"# timing keys of accelerations(): {rows[-1].get('timing_keys')}")
            if args.peer:
                emit(run_peer(n, args), rows, args, head)
                if not PEER.exists():
                    print(f"# jz-fmm peer skipped: {rows[-1]['error']}", flush=True)
            ic.unlink()
            print(f"# {time.perf_counter() - _T0:.0f} s into the run", flush=True)
    finally:
        shutil.rmtree(tmp, ignore_errors=True)
    tables([r for r in rows if r["kind"] != "header"])


if __name__ == "__main__":
    main()
