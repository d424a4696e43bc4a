"""A disk galaxy run timed by the caller's clock, and what it did to the disk (issue 32's
benchmark: GOTHIC's M31 model with block steps).

    python scripts/bench/galaxy.py CONFIG --n N --t-end T [--device D] [--set KEY=VALUE ...]
                                   [--out DIR] [--json FILE] [--snapshot-dt DT]
                                   [--slice-to T1 [--resume]] [--wall-limit S]

Runs ``hybridtree run CONFIG`` (a config of ics.kind = "galaxy") with ics.n = N and
time.t_end = T, and reports:
- the wall time of the command and of its stepping (the end line's wall_s), the smallest
  step (time.dt / 2^k of the deepest bin that held particles: timebins.csv) and the wall
  time per smallest step (stepping wall / substeps, GOTHIC's figure: every substep
  advances the system by one smallest step);
- the disk (PartType2) at every snapshot (the first against the last), about its own
  centre of mass and in the plane normal to its angular momentum, in annuli 2 ± 0.25 and
  3 ± 0.25 R_d: the sech² scale height (median |z| / artanh ½) and the radial velocity
  dispersion;
- energy conservation (diagnostics.csv's rel_energy_error at the end) and the total and
  the disk's angular momentum, start against end.

Snapshots: every --snapshot-dt (default T: the start and the end only).

A long run in slices (one call each, on a machine whose files stay between calls):
``--slice-to T1`` runs up to T1 (a new run in --out, replacing what is there), and
``--slice-to T2 --resume`` continues the run in --out (``hybridtree run --restart DIR
--set time.t_end=T2``: the same folder, diagnostics.csv and run.log continued) up to T2.
Each slice's wall time, stepping wall (its end line), steps and time bins are kept in
DIR/galaxy_slices.json; the call that reaches --t-end reports over the whole run (wall
times, steps and substeps summed over the slices; diagnostics.csv's energy error, which is
against the run's initial energy).  ``--wall-limit S`` stops a slice with SIGTERM after S
seconds of wall time: hybridtree writes a restart point (restart.hdf5) and --resume goes
on from it; such a slice has no end line, its stepping wall is then the caller's wall (an
upper bound: "approximate" in the report).  Without --slice-to and --resume: one call
from 0 to --t-end, as before.
"""

from __future__ import annotations

import argparse
import csv
import json
import math
import re
import signal
import subprocess
import sys
import time
from pathlib import Path

import h5py
import numpy as np

from common import CHILD_CWD, child_env

ANNULI = (2.0, 3.0)          # in R_d
HALF_WIDTH = 0.25            # of an annulus, in R_d
STATE = "galaxy_slices.json"
BIN_KEYS = ("bin", "dt", "particles", "substeps", "seconds")


def disk_state(path: Path, r_d: float) -> dict[str, float]:
    """Scale height and σ_R of the disk in annuli about ANNULI R_d (internal units)."""
    with h5py.File(path, "r") as f:
        g = f["PartType2"]
        x, v, m = g["Coordinates"][...], g["Velocities"][...], g["Masses"][...]
    x = x - m @ x / m.sum()
    v = v - m @ v / m.sum()
    lz = (m[:, None] * np.cross(x, v)).sum(axis=0)
    e3 = lz / np.linalg.norm(lz)
    e1 = np.cross(e3, [1.0, 0.0, 0.0] if abs(e3[0]) < 0.9 else [0.0, 1.0, 0.0])
    e1 /= np.linalg.norm(e1)
    e2 = np.cross(e3, e1)
    px, py, z = x @ e1, x @ e2, x @ e3
    vx, vy = v @ e1, v @ e2
    r = np.hypot(px, py)
    vr = (px * vx + py * vy) / np.maximum(r, 1e-30)
    out = {}
    for a in ANNULI:
        ring = np.abs(r - a * r_d) < HALF_WIDTH * r_d
        out[f"z_d_{a:g}"] = float(np.median(np.abs(z[ring])) / math.atanh(0.5))
        out[f"sigma_r_{a:g}"] = float(np.std(vr[ring]))
        out[f"n_{a:g}"] = int(ring.sum())
    return out


def rows(path: Path) -> list[dict[str, str]]:
    with open(path, newline="") as f:
        return list(csv.DictReader(f))


def run_point(path: Path) -> tuple[int, float]:
    """(step, time) of a snapshot or restart point of a hybridtree run."""
    with h5py.File(path, "r") as f:
        s = f["RunState"].attrs
        return int(s["Step"]), float(s["Time"])


def myr(path: Path) -> float:
    with h5py.File(path, "r") as f:
        return 1000.0 * float(f["Header"].attrs["Time_GYR"])


def newest_point(out: Path) -> tuple[int, float, Path] | None:
    """The newest snapshot or restart point in ``out`` (where a --restart goes on)."""
    points = [(*run_point(p), p) for p in list(out.glob("snapshot_*.hdf5"))
              + list(out.glob("restart.hdf5"))]
    return max(points, key=lambda q: q[0]) if points else None


def run_slice(cmd: list[str], wall_limit: float) -> tuple[float, int, bool, str]:
    """Run ``cmd``; after ``wall_limit`` s (0: none) SIGTERM (hybridtree writes its restart
    point and stops).  Returns (wall, returncode, stopped by the limit, stderr)."""
    t0 = time.perf_counter()
    proc = subprocess.Popen(cmd, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
                            env=child_env(), cwd=CHILD_CWD)
    stopped = False
    try:
        _, err = proc.communicate(timeout=wall_limit or None)
    except subprocess.TimeoutExpired:
        stopped = True
        proc.send_signal(signal.SIGTERM)
        _, err = proc.communicate()
    return time.perf_counter() - t0, proc.returncode, stopped, err


def end_lines(out: Path) -> list[re.Match]:
    return list(re.finditer(r"end: steps=(\d+) wall_s=([\d.]+)", (out / "run.log").read_text()))


def pct(a: float, b: float) -> float:
    return 100.0 * (b / a - 1.0)


def report(args: argparse.Namespace, out: Path, state: dict, r_d: float, dt0: float) -> dict:
    """The whole run's figures (every slice's; the disk at every snapshot)."""
    slices = state["slices"]
    approximate = any(s["interrupted"] for s in slices)
    stepping = sum(s["stepping_s"] for s in slices)
    steps = sum(s["steps"] for s in slices)
    substeps = sum(s["substeps"] for s in slices)
    used = [b for s in slices for b in s["bins"] if int(b["particles"]) > 0]
    dt_min = min((float(b["dt"]) for b in used), default=dt0)
    merged: dict[int, dict] = {}      # per bin over the slices (particles: the last slice's)
    for s in slices:
        for b in s["bins"]:
            m = merged.setdefault(int(b["bin"]), {"bin": b["bin"], "dt": b["dt"],
                                                  "substeps": 0, "seconds": 0.0})
            m["particles"] = b["particles"]
            m["substeps"] += int(b["substeps"])
            m["seconds"] += float(b["seconds"])
    held = {int(b["bin"]) for b in used}
    bins = [{k: str(m[k]) for k in BIN_KEYS} for i, m in sorted(merged.items()) if i in held]
    diag = rows(out / "diagnostics.csv")
    types = rows(out / "diagnostics_types.csv")
    disk = [r for r in types if r["type"] == "2"]
    snaps = sorted(out.glob("snapshot_*.hdf5"), key=lambda p: run_point(p)[0])
    states = []
    for p in snaps:
        step, t = run_point(p)
        states.append({"snapshot": p.name, "step": step, "time": t,
                       "myr": myr(p), **disk_state(p, r_d)})
    first, last = states[0], states[-1]
    keys = [f"{q}_{a:g}" for a in ANNULI for q in ("z_d", "sigma_r")]

    def lvec(r: dict) -> np.ndarray:
        return np.array([float(r[k]) for k in ("lx", "ly", "lz")])

    wall = sum(s["wall_s"] for s in slices)
    rec = {"config": args.config, "n": args.n, "t_end": args.t_end, "device": args.device,
           "sets": args.set, "snapshot_dt": state["snapshot_dt"],
           "wall_s": wall, "stepping_s": stepping, "steps": steps, "substeps": substeps,
           "dt_min": dt_min, "wall_per_smallest_step_s": stepping / substeps,
           "bins": bins,
           "rel_energy_error": float(diag[-1]["rel_energy_error"]),
           "rel_energy_error_from_rows": (float(diag[-1]["total"]) - float(diag[0]["total"]))
           / abs(float(diag[0]["total"])),
           "l_total_change": float(np.linalg.norm(lvec(diag[-1]) - lvec(diag[0]))
                                   / np.linalg.norm(lvec(diag[0]))),
           "disk_lz_change": float(lvec(disk[-1])[2] / lvec(disk[0])[2] - 1.0),
           "disk_first": {k: v for k, v in first.items() if k not in ("snapshot", "step")},
           "disk_last": {k: v for k, v in last.items() if k not in ("snapshot", "step")},
           "disk_change_pct": {k: pct(first[k], last[k]) for k in keys},
           "disk_snapshots": states, "r_d": r_d,
           "slices": slices, "approximate": approximate}
    return rec


def main(argv: list[str]) -> dict:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("config")
    ap.add_argument("--n", type=int, required=True)
    ap.add_argument("--t-end", type=float, required=True)
    ap.add_argument("--device", default="")
    ap.add_argument("--set", action="append", default=[])
    ap.add_argument("--out", default="/tmp/galaxy_bench")
    ap.add_argument("--json", default="")
    ap.add_argument("--snapshot-dt", type=float, default=0.0,
                    help="time between snapshots (default: --t-end)")
    ap.add_argument("--slice-to", type=float, default=0.0,
                    help="run only up to this time (a slice; default --t-end)")
    ap.add_argument("--resume", action="store_true",
                    help="continue the run in --out (from its newest snapshot or restart point)")
    ap.add_argument("--wall-limit", type=float, default=0.0,
                    help="stop the slice (SIGTERM: a restart point) after this many seconds")
    args = ap.parse_args(argv)
    from hybridtree.config import load_config
    from hybridtree.ics.galaxy import galaxy_params
    settings = load_config(args.config)
    r_d = galaxy_params({"model": settings.ics.model}).disk.r_d
    out = Path(args.out).resolve()       # the child runs elsewhere (common.CHILD_CWD)
    to = min(args.slice_to or args.t_end, args.t_end)
    state_path = out / STATE
    if args.resume:
        if not state_path.exists():
            sys.exit(f"--resume: no sliced run in {out} ({STATE} is missing)")
        state = json.loads(state_path.read_text())
        for k in ("config", "n", "t_end"):
            if state[k] != getattr(args, k):
                sys.exit(f"--resume: {k} {getattr(args, k)!r} is not the run's {state[k]!r}")
        point = newest_point(out)
        if point is None:
            sys.exit(f"--resume: no snapshot or restart point in {out}")
        t_from = point[1]
        if to <= t_from:
            sys.exit(f"--resume: the run in {out} is at t = {t_from:g} already (--slice-to {to:g})")
        cmd = [sys.executable, "-m", "hybridtree", "run", "--restart", str(out), "--quiet",
               "--set", f"time.t_end={to}"]
    else:
        snap_dt = args.snapshot_dt or args.t_end
        state = {"config": args.config, "n": args.n, "t_end": args.t_end, "device": args.device,
                 "sets": args.set, "snapshot_dt": snap_dt, "slices": []}
        t_from = 0.0
        cmd = [sys.executable, "-m", "hybridtree", "run", str(Path(args.config).resolve()),
               "--overwrite", "--quiet", "--set", f"ics.n={args.n}", "--set", f"time.t_end={to}",
               "--set", f"output.dir={out}", "--set", f"output.snapshot_dt={snap_dt}"]
        for s in args.set:
            cmd += ["--set", s]
        state_path.unlink(missing_ok=True)
    if args.device:
        cmd += ["--device", args.device]
    n_ends = len(end_lines(out)) if args.resume else 0
    wall, rc, stopped, err = run_slice(cmd, args.wall_limit)
    point = newest_point(out)
    if (rc and not (stopped and rc == 128 + signal.SIGTERM)) or point is None:
        sys.exit(f"hybridtree run failed ({rc}): {err[-2000:]}")
    step_to, t_to, _ = point
    ends = end_lines(out)
    bins = rows(out / "timebins.csv") if (out / "timebins.csv").exists() else []
    used = [b for b in bins if int(b["particles"]) > 0]
    if stopped:             # no end line: the caller's wall, the steps from the restart point
        step_from = state["slices"][-1]["step_to"] if state["slices"] else 0
        steps, stepping = step_to - step_from, wall
        dt_min = min((float(b["dt"]) for b in used), default=settings.time.dt)
        substeps = int(round((t_to - t_from) / dt_min))
    else:
        if len(ends) != n_ends + 1:
            sys.exit(f"run.log of {out}: {len(ends) - n_ends} new end lines, not 1")
        steps, stepping = int(ends[-1].group(1)), float(ends[-1].group(2))
        substeps = sum(int(b["substeps"]) for b in bins) or steps
    # the end line's phases (build_s, walk_s, transfer_s, reduce_s, output_s, ...)
    phases = {} if stopped else {k: float(v) for k, v in re.findall(
        r" (\w+_s)=([-+\d.eE]+)", ends[-1].string[ends[-1].start():].split("\n")[0])
        if k != "wall_s"}
    state["slices"].append({"t_from": t_from, "t_to": t_to, "step_to": step_to, "wall_s": wall,
                            "stepping_s": stepping, "steps": steps, "substeps": substeps,
                            "interrupted": stopped, "phases": phases,
                            "bins": [{k: b[k] for k in BIN_KEYS} for b in bins]})
    state_path.write_text(json.dumps(state, indent=1))
    if t_to < args.t_end:
        rec = {"slice": len(state["slices"]), **state["slices"][-1],
               "continue": f"--slice-to T --resume --out {out}"}
        print(json.dumps(rec, indent=1))
        return rec
    rec = report(args, out, state, r_d, settings.time.dt)
    print(json.dumps(rec, indent=1))
    if args.json:
        Path(args.json).write_text(json.dumps(rec, indent=1))
    return rec


if __name__ == "__main__":
    main(sys.argv[1:])
