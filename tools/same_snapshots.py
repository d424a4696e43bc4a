"""Whether two versions of the code write the same snapshots, bit for bit.

A restructuring must not change a single bit of what a run writes.  This script runs a
fixed set of small runs (plain, hybrid, block steps, the relative criterion, direct,
cosmological, a periodic box; host and device states; 1, 2 and 3 MPI processes) with the code that
``python -m hybridtree`` finds, and records a SHA-256 of every dataset of every snapshot
(and of the header attributes that are physics: time, redshift, counts, masses).

    python tools/same_snapshots.py record OUT.json [--only NAME ...] [--device D]
    python tools/same_snapshots.py compare BEFORE.json AFTER.json

To compare with an older commit, record once with ``PYTHONPATH`` naming a worktree of
that commit (``git worktree add /tmp/before <rev>``) and once with the current tree:

    PYTHONPATH=/tmp/before python tools/same_snapshots.py record before.json
    python tools/same_snapshots.py record after.json
    python tools/same_snapshots.py compare before.json after.json

Exit status 0 when every run matches, 1 when one differs (the first differing dataset
of each run is named).  Runs take about 2-4 minutes in all on 2 CPU cores.
"""

from __future__ import annotations

import argparse
import hashlib
import json
import os
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path

import h5py
import numpy as np

HERE = Path(__file__).resolve().parent.parent

PLUMMER = ["ics.kind=plummer", "ics.n=3000", "ics.seed=7", "gravity.eps=0.02",
           "time.dt=0.015625", "time.t_end=0.125", "output.snapshot_dt=0.0625",
           "output.diag_every=4"]
HYBRID = ["hybrid.enabled=true", "hybrid.r_in=0.02", "hybrid.r_out=0.1", "hybrid.n_hard=2"]
BLOCK = ["time.stepping=block", "time.eta=0.1", "time.max_bin=4"]
RELATIVE = ["gravity.opening=relative", "gravity.alpha=0.002"]
QUAD = ["gravity.multipole=quadrupole"]
COSMO = ["ics.n_grid=16", "ics.box=30", "ics.radius=15", "cosmology.steps=8",
         "cosmology.z_end=5", "output.redshifts=10, 5", "output.diag_every=4"]
#: a periodic box (TreePM, 2LPT: configs/cosmo_box_small.toml at 16^3, 4 steps)
BOX = ["ics.n_grid=16", "cosmology.steps=4", "cosmology.z_end=30", "output.redshifts=40, 30",
       "output.diag_every=2"]

#: name -> (config file, overrides, processes, state backend or "")
RUNS: dict[str, tuple[str, list[str], int, str]] = {
    "plain": ("configs/plummer_small.toml", PLUMMER, 0, ""),
    "plain_host": ("configs/plummer_small.toml", PLUMMER, 0, "host"),
    "quadrupole": ("configs/plummer_small.toml", PLUMMER + QUAD, 0, ""),
    "direct": ("configs/plummer_small.toml", PLUMMER + ["gravity.method=direct"], 0, ""),
    "hybrid": ("configs/plummer_small.toml", PLUMMER + HYBRID, 0, ""),
    "hybrid_host": ("configs/plummer_small.toml", PLUMMER + HYBRID, 0, "host"),
    "block": ("configs/plummer_small.toml", PLUMMER + BLOCK, 0, ""),
    "block_host": ("configs/plummer_small.toml", PLUMMER + BLOCK, 0, "host"),
    "relative": ("configs/plummer_small.toml", PLUMMER + RELATIVE, 0, ""),
    "relative_host": ("configs/plummer_small.toml", PLUMMER + RELATIVE, 0, "host"),
    "cosmo": ("configs/cosmo_small.toml", COSMO, 0, ""),
    "mpi1": ("configs/plummer_small.toml", PLUMMER, 1, ""),
    "mpi3": ("configs/plummer_small.toml", PLUMMER, 3, ""),
    "mpi3_hybrid": ("configs/plummer_small.toml", PLUMMER + HYBRID, 3, ""),
    "mpi3_block": ("configs/plummer_small.toml", PLUMMER + BLOCK, 3, ""),
    "mpi3_host": ("configs/plummer_small.toml", PLUMMER + HYBRID, 3, "host"),
    "mpi3_cosmo": ("configs/cosmo_small.toml", COSMO, 3, ""),
    "box": ("configs/cosmo_box_small.toml", BOX, 0, ""),
    "box_host": ("configs/cosmo_box_small.toml", BOX, 0, "host"),
    "mpi2_box": ("configs/cosmo_box_small.toml", BOX, 2, ""),
}

#: header attributes that are physics (the rest: versions, dates, paths, timings)
HEADER = ("Time", "Redshift", "NumPart_ThisFile", "NumPart_Total", "MassTable", "BoxSize",
          "NumFilesPerSnapshot")


def digest(path: Path) -> dict[str, str]:
    """SHA-256 of every dataset of one HDF5 file, and of the physical header attributes."""
    out: dict[str, str] = {}
    with h5py.File(path, "r") as f:
        def visit(name, obj):
            if isinstance(obj, h5py.Dataset):
                data = np.ascontiguousarray(obj[()])
                out[name] = hashlib.sha256(data.tobytes()).hexdigest()
        f.visititems(visit)
        if "Header" in f:
            for key in HEADER:
                if key in f["Header"].attrs:
                    value = np.asarray(f["Header"].attrs[key])
                    out[f"Header@{key}"] = hashlib.sha256(value.tobytes()).hexdigest()
    return out


def run_one(name: str, device: str | None) -> dict[str, dict[str, str]]:
    config, sets, procs, backend = RUNS[name]
    env = dict(os.environ)
    env.pop("HYBRIDTREE_STATE", None)
    if backend:
        env["HYBRIDTREE_STATE"] = backend
    with tempfile.TemporaryDirectory() as tmp:
        out = Path(tmp) / "out"
        cmd = [sys.executable, "-m", "hybridtree", "run", str(HERE / config), "--quiet",
               "--set", f"output.dir={out}"]
        for s in sets:
            cmd += ["--set", s]
        if device:
            cmd += ["--device", device]
        if procs:
            cmd = [shutil.which("mpiexec") or "mpiexec", "-n", str(procs)] + cmd
        done = subprocess.run(cmd, env=env, capture_output=True, text=True, timeout=900,
                              cwd=tmp)   # not the repository: PYTHONPATH decides the code
        if done.returncode != 0:
            raise SystemExit(f"{name}: exit {done.returncode}\n{done.stdout}\n{done.stderr}")
        code = subprocess.run([sys.executable, "-c", "import hybridtree; print(hybridtree.__file__)"],
                              env=env, capture_output=True, text=True, cwd=tmp).stdout.strip()
        print(f"{name}: the code in {Path(code).parent}", flush=True)
        return {p.name: digest(p) for p in sorted(out.glob("snapshot_*.hdf5"))}


def compare(before: dict, after: dict) -> int:
    bad = 0
    for name in sorted(set(before) | set(after)):
        a, b = before.get(name), after.get(name)
        if a is None or b is None:
            print(f"{name}: only in {'after' if a is None else 'before'}")
            bad += 1
            continue
        diff = [f"{snap}/{key}" for snap in sorted(set(a) | set(b))
                for key in sorted(set(a.get(snap, {})) | set(b.get(snap, {})))
                if a.get(snap, {}).get(key) != b.get(snap, {}).get(key)]
        if diff:
            bad += 1
            print(f"{name}: DIFFERS ({len(diff)} datasets; first {diff[0]})")
        else:
            print(f"{name}: same ({sum(len(v) for v in a.values())} datasets in {len(a)} "
                  f"snapshots)")
    return 1 if bad else 0


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    sub = ap.add_subparsers(dest="cmd", required=True)
    r = sub.add_parser("record")
    r.add_argument("out")
    r.add_argument("--only", nargs="*", choices=sorted(RUNS))
    r.add_argument("--device")
    c = sub.add_parser("compare")
    c.add_argument("before")
    c.add_argument("after")
    a = ap.parse_args(argv)
    if a.cmd == "compare":
        return compare(json.loads(Path(a.before).read_text()),
                       json.loads(Path(a.after).read_text()))
    result = {}
    for name in a.only or RUNS:
        result[name] = run_one(name, a.device)
        print(f"{name}: {len(result[name])} snapshots", flush=True)
    Path(a.out).write_text(json.dumps(result, indent=1, sort_keys=True))
    return 0


if __name__ == "__main__":
    sys.exit(main())
