#!/usr/bin/env python
"""Issue 20's benchmark (not a test): a cosmological config end to end, as a user runs it
-- ``hybridtree run CONFIG`` (initial conditions and all steps), ``hybridtree halos`` on
the z = 0 snapshot, ``hybridtree plot`` -- each timed by the caller's clock, and the
run reported in the oct-tree papers' terms: wall time, total interactions, sustained
Gflop/s in the 38-flop convention (38 × interactions / seconds), time per step at the
start (z = 49) and at the end (z = 0).

    PYTHONPATH=. python scripts/bench/cosmo.py configs/cosmo_sphere.toml --device nvidia --json r.json
    PYTHONPATH=. python scripts/bench/cosmo.py configs/cosmo_small.toml

"Step s at the start/end": the mean wall per step (``step_s``) of the first / last three
diagnostics reports after step 0.  Interactions: particle-particle plus particle-cell,
from the run's ``end:`` line.  Output goes to ``--out`` (default: the config's
output.dir with ``--set``), removed first.
"""

from __future__ import annotations

import argparse
import csv
import datetime
import json
import re
import shutil
import subprocess
import sys
import time
from pathlib import Path

from common import CHILD_CWD, FLOPS_PER_INTERACTION, add_device, child_env


def timed(cmd: list[str], env: dict) -> tuple[float, str]:
    t0 = time.perf_counter()
    proc = subprocess.run(cmd, capture_output=True, text=True, env=env, cwd=CHILD_CWD)
    wall = time.perf_counter() - t0
    if proc.returncode != 0:
        raise SystemExit(f"{' '.join(cmd)} failed ({proc.returncode}):\n{proc.stderr[-3000:]}")
    return wall, proc.stdout + proc.stderr




def mass_function_check(catalogue: Path, snapshot: Path, radius: float, min_len: int = 100,
                        bins: int = 4, fraction: float = 0.5) -> dict:
    """dn/dlnM at z = 0 of the halos of at least ``min_len`` particles whose centre lies
    within ``fraction`` of the sphere's comoving ``radius`` (config length units) of its centre,
    over one decade of mass from the ``min_len``-particle mass, against Sheth-Tormen and
    Tinker (colossus), per bin."""
    import h5py
    import numpy as np
    from hybridtree.analysis.halos import mass_function, reference_mass_function
    from hybridtree.config.units import MPC_CM, MSUN_G
    with h5py.File(catalogue, "r") as f:
        u = f["Units"].attrs if "Units" in f else f["Header"].attrs
        length_mpc_h = float(u["UnitLength_in_cm"]) / MPC_CM        # file units: L/h
        mass_msun_h = float(u["UnitMass_in_g"]) / MSUN_G
        length = np.asarray(f["Group/GroupLen"])
        mass = np.asarray(f["Group/GroupMass"]) * mass_msun_h
        pos = np.asarray(f["Group/GroupPos"]) * length_mpc_h
        h = float(f["Header"].attrs.get("HubbleParam", f["Parameters"].attrs["HubbleParam"]))
    with h5py.File(snapshot, "r") as f:
        m_particle = float(np.asarray(f["PartType1/Masses"][:1])[0]) * mass_msun_h
    r_half = fraction * radius * length_mpc_h * h          # comoving Mpc/h
    keep = (length >= min_len) & (np.linalg.norm(pos, axis=1) < r_half)
    volume = 4.0 / 3.0 * np.pi * r_half ** 3
    edges = np.geomspace(min_len * m_particle, 10 * min_len * m_particle, bins + 1)
    mf = mass_function(mass[keep], volume, edges)
    out = {"volume_mpc_h3": volume, "edges_msun_h": edges.tolist(),
           "counts": mf.counts.tolist(), "dndlnm": mf.dndlnm.tolist()}
    for model in ("sheth99", "tinker08"):
        ref = reference_mass_function(snapshot, 0.0, mf.mass, model=model)
        out[f"ratio_{model}"] = (mf.dndlnm / ref).round(3).tolist()
    return out


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("config")
    add_device(ap)
    ap.add_argument("--out", default=None, help="output folder (default: the config's)")
    ap.add_argument("--set", action="append", default=[], help="more --set for the run")
    ap.add_argument("--json", default=None)
    args = ap.parse_args()
    env = child_env()
    py = [sys.executable, "-m", "hybridtree"]
    sets = [x for s in args.set for x in ("--set", s)]
    if args.out:
        out = Path(args.out).resolve()
    else:
        from hybridtree.config import load_config
        out = Path(load_config(args.config).output.dir).resolve()
    # absolute paths: the child runs outside the checkout (common.CHILD_CWD)
    sets += ["--set", f"output.dir={out}"]
    shutil.rmtree(out, ignore_errors=True)
    dev = ["--device", args.device] if args.device else []
    run_s, log = timed(py + ["run", str(Path(args.config).resolve()), "--quiet", *dev, *sets],
                       env)
    end = (out / "run.log").read_text().splitlines()[-1]
    fields = dict(re.findall(r"(\w+)=(\S+)", end))
    rows = list(csv.DictReader(open(out / "diagnostics.csv")))[1:]
    step_s = [float(r["step_s"]) for r in rows]
    snaps = sorted(out.glob("snapshot_*.hdf5"))
    halos_s, halos_out = timed(py + ["halos", str(snaps[-1])], env)
    plot_s, _ = timed(py + ["plot", str(out)], env)
    inter = int(fields["interactions"])
    result = {
        "date": datetime.datetime.now().isoformat(timespec="seconds"),
        "command": " ".join(["python", *sys.argv]), "config": args.config,
        "run_wall_s": round(run_s, 2), "run_steps_wall_s": float(fields["wall_s"]),
        "steps": int(fields["steps"]), "interactions": inter,
        "gflops_38_run": round(FLOPS_PER_INTERACTION * inter / run_s / 1e9, 1),
        "gflops_38_force": round(FLOPS_PER_INTERACTION * inter
                                 / (float(fields["build_s"]) + float(fields["walk_s"])) / 1e9, 1),
        "step_s_start": sum(step_s[:3]) / 3, "step_s_end": sum(step_s[-3:]) / 3,
        "a_start_rows": [float(r["a"]) for r in rows[:3]],
        "energy_error_end": float(rows[-1]["rel_energy_error"]),
        "halos_s": round(halos_s, 2), "halos": halos_out.strip().splitlines()[-3:],
        "plot_s": round(plot_s, 2), "total_s": round(run_s + halos_s + plot_s, 2),
        "snapshots": [p.name for p in snaps],
        "mass_function": mass_function_check(sorted(out.glob("fof_tab_*.hdf5"))[-1],
                                             snaps[-1], _radius(args.config, sets)),
        "mass_function_075": mass_function_check(sorted(out.glob("fof_tab_*.hdf5"))[-1],
                                                 snaps[-1], _radius(args.config, sets),
                                                 fraction=0.75),
        "start_line": (out / "run.log").read_text().splitlines()[0],
    }
    text = json.dumps(result, indent=1)
    print(text)
    if args.json:
        Path(args.json).write_text(text)


def _radius(config: str, sets: list[str]) -> float:
    from hybridtree.config import load_config, parse_overrides
    return load_config(config, parse_overrides(sets[1::2])).ics.radius


if __name__ == "__main__":
    main()
