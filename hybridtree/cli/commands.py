"""The commands of the command line: each takes the parsed arguments and returns the exit
status; user errors are raised (:mod:`hybridtree.cli` reports them)."""

from __future__ import annotations

import argparse
import json
import os
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

from ..config import SCHEMA
from ..errors import HybridtreeError, UserInputError

__all__ = ["IC_KINDS", "bench", "devices", "halos", "ic", "info", "pk", "plot", "run"]

IC_KINDS = ("plummer", "hernquist", "cold_sphere", "cosmo_sphere", "galaxy")


@contextmanager
def _user_input() -> Iterator[None]:
    """Around a stage that takes the user's input in (arguments, a config's settings, a
    snapshot): a ValueError raised there is the user's mistake (the lower layers check
    their arguments with ValueError), reported as a user error."""
    try:
        yield
    except HybridtreeError:
        raise
    except ValueError as exc:
        raise UserInputError(str(exc)) from exc


def run(args: argparse.Namespace) -> int:
    from ..run.driver import run as run_simulation

    overrides = list(args.set or [])
    if args.device:
        overrides.append(f"gravity.device={json.dumps(args.device)}")
    run_simulation(args.config, overrides, restart=args.restart, overwrite=args.overwrite,
        quiet=args.quiet, log_json=args.log_json)
    return 0


def ic(args: argparse.Namespace) -> int:
    import numpy as np

    from ..ics import spheres as ics
    from ..io.snapshot import write_snapshot
    from ..particles import Particles
    from ..config.units import Units

    out = Path(args.output)
    if out.exists() and not args.overwrite:
        raise FileExistsError(f"{out} exists (use --overwrite to replace it)")
    if not out.parent.is_dir():
        raise FileNotFoundError(f"folder {str(out.parent)!r} does not exist")
    if args.kind == "cosmo_sphere":
        return ic_cosmo(args, out)
    if args.kind == "galaxy":
        return ic_galaxy(args, out)
    make = {"plummer": ics.plummer, "hernquist": ics.hernquist, "cold_sphere": ics.cold_sphere}
    from ..run.size import check_ic_memory
    check_ic_memory(args.n)             # before anything is drawn
    with _user_input():
        pos, vel, mass = make[args.kind](args.n, seed=args.seed)
    units = Units(SCHEMA["units"]["length_cm"].default, SCHEMA["units"]["mass_g"].default)
    p = Particles(pos, vel, mass, np.arange(1, len(mass) + 1, dtype=np.uint64))
    params = {"ics.kind": args.kind, "ics.n": args.n, "ics.seed": args.seed}
    write_snapshot(out, p, 0.0, units, params, overwrite=args.overwrite)
    print(f"wrote {out}: {args.kind}, {args.n} particles, seed {args.seed}")
    return 0


def ic_galaxy(args: argparse.Namespace, out: Path) -> int:
    """``hybridtree ic galaxy``: the disk galaxy ics.model (--set ics.model=m31) of n
    particles as a run would start it, each component in its own PartTypeN."""
    from ..config.settings import load_config, parse_overrides, settings_from_flat
    from ..config.units import Units
    from ..io.snapshot import write_snapshot
    from ..run.setup import initial_conditions
    from ..run.size import check_ic_memory

    over = parse_overrides(args.set or [])
    over.update({"ics.kind": "galaxy", "ics.n": args.n, **_seed(args)})
    s = (load_config(args.config, over) if args.config else
         settings_from_flat(over, "hybridtree ic"))
    check_ic_memory(args.n)             # before anything is drawn
    units = Units(s.units.length_cm, s.units.mass_g)
    with _user_input():
        p, t0 = initial_conditions(s, units)
    write_snapshot(out, p, t0, units, s.flat(), overwrite=args.overwrite)
    counts = ", ".join(f"{int((p.types == t).sum())} PartType{t}" for t in sorted(set(p.types.tolist())))
    print(f"wrote {out}: galaxy {s.ics.model}, {args.n} particles ({counts}), seed {s.ics.seed}")
    return 0


def ic_cosmo(args: argparse.Namespace, out: Path) -> int:
    """``hybridtree ic cosmo_sphere``: the sphere a cosmological run with these settings
    starts from, as a GADGET cosmological snapshot at cosmology.z_start."""
    from ..config.settings import load_config, parse_overrides, settings_from_flat
    from ..io.snapshot import write_snapshot
    from ..particles import Particles
    from ..run.setup import initial_conditions

    over = parse_overrides(args.set or [])
    over.update({"ics.kind": "cosmo_sphere", "ics.n_grid": args.n, **_seed(args),
                 "cosmology.enabled": True})
    s = (load_config(args.config, over) if args.config else
         settings_from_flat(over, "hybridtree ic"))
    from ..config.units import Units
    units = Units(s.units.length_cm, s.units.mass_g)
    with _user_input():
        p, t0 = initial_conditions(s, units)
    a = 1.0 / (1.0 + s.cosmology.z_start)
    c = s.cosmology
    write_snapshot(out, Particles(p.pos, p.vel, p.mass, p.ids), t0, units, s.flat(),
                   overwrite=args.overwrite,
                   cosmology={"a": a, "h": c.h, "omega_m": c.omega_m,
                              "omega_lambda": c.omega_lambda})
    print(f"wrote {out}: cosmo_sphere, {len(p)} particles ({args.n}^3 grid, radius "
          f"{s.ics.radius} of a {s.ics.box} cube), z = {c.z_start}, seed {s.ics.seed}")
    return 0


def _seed(args: argparse.Namespace) -> dict[str, int]:
    """The seed override of ``ic --seed S`` (it wins over --config's and --set's
    ics.seed); none without --seed, so that the config's ics.seed (or --set's) holds and
    the file is the run's snapshot_0000."""
    return {"ics.seed": args.seed} if getattr(args, "seed_given", False) else {}


def halos(args: argparse.Namespace) -> int:
    from ..analysis.halos import find_halos, write_catalogue
    from ..analysis.halos.fof_device import halo_runtime

    from ..io.snapshot import resolve_snapshot

    snap = resolve_snapshot(args.snapshot)
    cat = find_halos(snap, b=args.b, min_len=args.min_len, link=args.link,
                     runtime=halo_runtime())
    path = write_catalogue(args.output or snap.parent, cat, snap, overwrite=args.overwrite)
    big = cat.group_len[0] if len(cat.group_len) else 0
    link = (f"b = {args.b}, linking length {cat.link:.4g} comoving length units / h"
            if cat.b is not None else f"linking length {cat.link:.4g} length units")
    print(f"wrote {path}: {len(cat.group_len)} halos of at least {args.min_len} particles "
          f"({link}); the largest has {big}")
    return 0


def pk(args: argparse.Namespace) -> int:
    from ..analysis.power import power_table, snapshot_power
    from ..analysis.power_device import analysis_runtime

    order = {"cic": 2, "tsc": 3}[args.order]
    with _user_input():
        ps, snap = snapshot_power(args.snapshot, n_mesh=args.mesh, order=order,
                                  interlace=not args.no_interlace, runtime=analysis_runtime())
    table = power_table(ps, snap, str(args.snapshot), order, not args.no_interlace)
    if args.out:
        Path(args.out).write_text(table)
        print(f"wrote {args.out}: P(k) in {len(ps.k)} shells, {ps.n_particles} particles, "
              f"mesh {ps.n_mesh}^3, box {ps.box:.6g} Mpc/h")
    else:
        print(table, end="")
    return 0


def devices(args: argparse.Namespace) -> int:
    from ..analysis.info import device_listing
    from ..device.choice import REMEDY, choose_device, list_devices, probe_device
    from ..device.runtime import DeviceError

    devices = list_devices()
    if not devices:
        raise DeviceError(f"no OpenCL device found ({REMEDY})")
    probes = {d: probe_device(d) for d in devices}
    try:
        chosen = choose_device(args.device)
    except DeviceError:
        if args.device or os.environ.get("HYBRIDTREE_DEVICE") or os.environ.get("PYOPENCL_CTX"):
            raise                   # a choice that matches nothing: the user's error
        chosen = None               # only simulators or failing devices: listed, none marked
    from ..run.plan import default_largest
    largest = {d: default_largest(d) for d in devices}
    print(device_listing(devices, chosen, probes=probes, largest=largest))
    return 0


def info(args: argparse.Namespace) -> int:
    from ..analysis.info import describe

    print(describe(args.snapshot))
    return 0


def plot(args: argparse.Namespace) -> int:
    try:
        from ..analysis.plot import plot_run
    except ImportError as exc:
        raise HybridtreeError(f"plotting needs matplotlib: pip install matplotlib "
                              f"(or the 'plot' extra) ({exc})") from None
    for path in plot_run(args.folder, snapshot=args.snapshot):
        print(f"wrote {path}")
    return 0


def bench(args: argparse.Namespace) -> int:
    from ..analysis.bench import bench as time_forces

    r = time_forces(args.n, method=args.method, theta=args.theta, multipole=args.multipole,
              device=args.device, repeat=args.repeat)
    if args.json:
        print(json.dumps(r))
    else:
        print(f"{r['method']} N={r['n']} theta={r['theta']} on {r['device']}: "
              f"{r['seconds']:.4f} s (build {r['build_s']:.4f} s), "
              f"{r['interactions_per_s']:.3e} interactions/s, "
              f"error median {r['err_median']:.2e} p99 {r['err_p99']:.2e}")
    return 0
