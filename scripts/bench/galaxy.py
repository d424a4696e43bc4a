"""A disk galaxy run timed by the caller's clock, and what it did to the disk (issue 32's
benchmark: GOTHIC's M31 model with block steps).

    python scripts/bench/galaxy.py CONFIG --n N --t-end T [--device D] [--set KEY=VALUE ...]
                                   [--out DIR] [--json FILE]

Runs ``hybridtree run CONFIG`` (a config of ics.kind = "galaxy") with ics.n = N and
time.t_end = T, and reports:
- the wall time of the command and of its stepping (the end line's wall_s), the smallest
  step (time.dt / 2^k of the deepest bin that held particles: timebins.csv) and the wall
  time per smallest step (stepping wall / substeps, GOTHIC's figure: every substep
  advances the system by one smallest step);
- the disk (PartType2) at the first and the last snapshot, about its own centre of mass
  and in the plane normal to its angular momentum, in annuli 2 ± 0.25 and 3 ± 0.25 R_d:
  the sech² scale height (median |z| / artanh ½) and the radial velocity dispersion;
- energy conservation (diagnostics.csv's rel_energy_error at the end) and the total and
  the disk's angular momentum, start against end.
"""

from __future__ import annotations

import argparse
import csv
import json
import math
import re
import subprocess
import sys
import time
from pathlib import Path

import h5py
import numpy as np

ANNULI = (2.0, 3.0)          # in R_d
HALF_WIDTH = 0.25            # of an annulus, in R_d


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


def main(argv: list[str]) -> dict:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("config")
    ap.add_argument("--n", type=int, required=True)
    ap.add_argument("--t-end", type=float, required=True)
    ap.add_argument("--device", default="")
    ap.add_argument("--set", action="append", default=[])
    ap.add_argument("--out", default="/tmp/galaxy_bench")
    ap.add_argument("--json", default="")
    args = ap.parse_args(argv)
    from hybridtree.config import load_config
    from hybridtree.ics.galaxy import galaxy_params
    settings = load_config(args.config)
    r_d = galaxy_params({"model": settings.ics.model}).disk.r_d
    cmd = [sys.executable, "-m", "hybridtree", "run", args.config, "--overwrite", "--quiet",
           "--set", f"ics.n={args.n}", "--set", f"time.t_end={args.t_end}",
           "--set", f"output.dir={args.out}", "--set", f"output.snapshot_dt={args.t_end}"]
    if args.device:
        cmd += ["--device", args.device]
    for s in args.set:
        cmd += ["--set", s]
    t0 = time.perf_counter()
    proc = subprocess.run(cmd, capture_output=True, text=True)
    wall = time.perf_counter() - t0
    if proc.returncode:
        sys.exit(f"hybridtree run failed ({proc.returncode}): {proc.stderr[-2000:]}")
    out = Path(args.out)
    end = re.search(r"end: steps=(\d+) wall_s=([\d.]+)", (out / "run.log").read_text())
    bins = rows(out / "timebins.csv") if (out / "timebins.csv").exists() else []
    substeps = sum(int(b["substeps"]) for b in bins) or int(end.group(1))
    used = [b for b in bins if int(b["particles"]) > 0]
    dt_min = min((float(b["dt"]) for b in used), default=settings.time.dt)
    diag = rows(out / "diagnostics.csv")
    types = rows(out / "diagnostics_types.csv")
    disk = [r for r in types if r["type"] == "2"]
    snaps = sorted(out.glob("snapshot_*.hdf5"))
    first, last = disk_state(snaps[0], r_d), disk_state(snaps[-1], r_d)

    def lvec(r: dict) -> np.ndarray:
        return np.array([float(r[k]) for k in ("lx", "ly", "lz")])

    rec = {"config": args.config, "n": args.n, "t_end": args.t_end, "device": args.device,
           "sets": args.set, "wall_s": wall, "stepping_s": float(end.group(2)),
           "steps": int(end.group(1)), "substeps": substeps, "dt_min": dt_min,
           "wall_per_smallest_step_s": float(end.group(2)) / substeps,
           "bins": [{k: b[k] for k in ("bin", "dt", "particles", "substeps", "seconds")}
                    for b in used],
           "rel_energy_error": float(diag[-1]["rel_energy_error"]),
           "l_total_change": float(np.linalg.norm(lvec(diag[-1]) - lvec(diag[0]))
                                   / np.linalg.norm(lvec(diag[0]))),
           "disk_lz_change": float(lvec(disk[-1])[2] / lvec(disk[0])[2] - 1.0),
           "disk_first": first, "disk_last": last, "r_d": r_d}
    print(json.dumps(rec, indent=1))
    if args.json:
        Path(args.json).write_text(json.dumps(rec, indent=1))
    return rec


if __name__ == "__main__":
    main(sys.argv[1:])
