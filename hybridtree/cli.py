"""Command line: ``hybridtree run | ic | devices | info | plot | bench``.

User mistakes end with exit status 2 and one line on stderr (``--debug`` shows the
traceback instead); an interrupted run ends with 130.
"""

from __future__ import annotations

import argparse
import json
import os
import sys
import time
from pathlib import Path

IC_KINDS = ("plummer", "hernquist", "cold_sphere", "cosmo_sphere")


class _Parser(argparse.ArgumentParser):
    """argparse, but a usage mistake is one line (and exit status 2)."""

    def error(self, message: str) -> None:  # type: ignore[override]
        self.exit(2, f"{self.prog}: error: {message} (see {self.prog} --help)\n")


def _run(args: argparse.Namespace) -> int:
    from .run.driver import run

    overrides = list(args.set or [])
    if args.device:
        overrides.append(f"gravity.device={json.dumps(args.device)}")
    run(args.config, overrides, restart=args.restart, overwrite=args.overwrite,
        quiet=args.quiet, log_json=args.log_json)
    return 0


def _ic(args: argparse.Namespace) -> int:
    import numpy as np

    from .ics import spheres as ics
    from .config.settings import SCHEMA
    from .io.snapshot import write_snapshot
    from .particles import Particles
    from .config.units import Units

    out = Path(args.output)
    if out.exists() and not args.overwrite:
        raise FileExistsError(f"{out} exists (use --overwrite to replace it)")
    if not out.parent.is_dir():
        raise FileNotFoundError(f"folder {str(out.parent)!r} does not exist")
    if args.kind == "cosmo_sphere":
        return _ic_cosmo(args, out)
    make = {"plummer": ics.plummer, "hernquist": ics.hernquist, "cold_sphere": ics.cold_sphere}
    from .run.size import check_ic_memory
    check_ic_memory(args.n)             # before anything is drawn
    pos, vel, mass = make[args.kind](args.n, seed=args.seed)
    units = Units(SCHEMA["units"]["length_cm"].default, SCHEMA["units"]["mass_g"].default)
    p = Particles(pos, vel, mass, np.arange(1, len(mass) + 1, dtype=np.uint64))
    params = {"ics.kind": args.kind, "ics.n": args.n, "ics.seed": args.seed}
    write_snapshot(out, p, 0.0, units, params, overwrite=args.overwrite)
    print(f"wrote {out}: {args.kind}, {args.n} particles, seed {args.seed}")
    return 0


def _ic_cosmo(args: argparse.Namespace, out: Path) -> int:
    """``hybridtree ic cosmo_sphere``: the sphere a cosmological run with these settings
    starts from, as a GADGET cosmological snapshot at cosmology.z_start."""
    from .config.settings import load_config, parse_overrides, settings_from_flat
    from .io.snapshot import write_snapshot
    from .particles import Particles
    from .run.setup import initial_conditions

    over = parse_overrides(args.set or [])
    over.update({"ics.kind": "cosmo_sphere", "ics.n_grid": args.n, "ics.seed": args.seed,
                 "cosmology.enabled": True})
    s = (load_config(args.config, over) if args.config else
         settings_from_flat(over, "hybridtree ic"))
    from .config.units import Units
    units = Units(s.units.length_cm, s.units.mass_g)
    p, t0 = initial_conditions(s, units)
    a = 1.0 / (1.0 + s.cosmology.z_start)
    c = s.cosmology
    write_snapshot(out, Particles(p.pos, p.vel, p.mass, p.ids), t0, units, s.flat(),
                   overwrite=args.overwrite,
                   cosmology={"a": a, "h": c.h, "omega_m": c.omega_m,
                              "omega_lambda": c.omega_lambda})
    print(f"wrote {out}: cosmo_sphere, {len(p)} particles ({args.n}^3 grid, radius "
          f"{s.ics.radius} of a {s.ics.box} cube), z = {c.z_start}, seed {args.seed}")
    return 0


def _halos(args: argparse.Namespace) -> int:
    from .analysis.halos import find_halos, write_catalogue

    from .io.snapshot import resolve_snapshot

    snap = resolve_snapshot(args.snapshot)
    cat = find_halos(snap, b=args.b, min_len=args.min_len)
    path = write_catalogue(args.output or snap.parent, cat, snap, overwrite=args.overwrite)
    big = cat.group_len[0] if len(cat.group_len) else 0
    print(f"wrote {path}: {len(cat.group_len)} halos of at least {args.min_len} particles "
          f"(b = {args.b}, linking length {cat.link:.4g} comoving length units / h); "
          f"the largest has {big}")
    return 0


def _devices(args: argparse.Namespace) -> int:
    from .analysis.info import device_listing
    from .device.choice import DeviceError, REMEDY, choose_device, list_devices, probe_device

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
    print(device_listing(devices, chosen, probes=probes))
    return 0


def _info(args: argparse.Namespace) -> int:
    from .analysis.info import describe

    print(describe(args.snapshot))
    return 0


def _plot(args: argparse.Namespace) -> int:
    try:
        from .analysis.plot import plot_run
    except ImportError as exc:
        raise RuntimeError(f"plotting needs matplotlib: pip install matplotlib "
                           f"(or the 'plot' extra) ({exc})") from None
    for path in plot_run(args.folder, snapshot=args.snapshot):
        print(f"wrote {path}")
    return 0


def _bench(args: argparse.Namespace) -> int:
    from .analysis.bench import bench

    r = bench(args.n, method=args.method, theta=args.theta, multipole=args.multipole,
              device=args.device, repeat=args.repeat)
    if args.json:
        print(json.dumps(r))
    else:
        print(f"{r['method']} N={r['n']} theta={r['theta']} on {r['device']}: "
              f"{r['seconds']:.4f} s (build {r['build_s']:.4f} s), "
              f"{r['interactions_per_s']:.3e} interactions/s, "
              f"error median {r['err_median']:.2e} p99 {r['err_p99']:.2e}")
    return 0


def build_parser() -> argparse.ArgumentParser:
    top = argparse.ArgumentParser(add_help=False)
    top.add_argument("--debug", action="store_true", help="show tracebacks of errors")
    # the commands' own --debug: no default, so an absent one does not reset a
    # ``hybridtree --debug COMMAND`` given before the command
    common = argparse.ArgumentParser(add_help=False)
    common.add_argument("--debug", action="store_true", default=argparse.SUPPRESS,
                        help="show tracebacks of errors")
    parser = _Parser(prog="hybridtree", parents=[top],
                     description="hybridtree: gravitational N-body tree code (OpenCL)")
    sub = parser.add_subparsers(dest="command", required=True, parser_class=_Parser,
                                help="the command; hybridtree COMMAND --help describes it")

    p = sub.add_parser("run", parents=[common], help="run a simulation",
                       description="Run a simulation from a TOML config, or continue one "
                                   "from a snapshot with --restart.")
    p.add_argument("config", nargs="?", help="configs/*.toml")
    p.add_argument("--restart", metavar="SNAPSHOT", help="continue from this run snapshot "
                   "(its settings, changed by --set; output goes beside it); a folder: its "
                   "newest complete snapshot or restart point (restart.hdf5); 'latest' "
                   "with CONFIG: the newest in output.dir")
    p.add_argument("--set", action="append", metavar="SECTION.NAME=VALUE",
                   help="override a setting, e.g. --set gravity.theta=0.6 (repeatable)")
    p.add_argument("--device", help="OpenCL device (same as --set gravity.device=...)")
    p.add_argument("--overwrite", action="store_true", help="replace an existing run's output")
    p.add_argument("--quiet", action="store_true", help="print nothing but errors")
    p.add_argument("--log-json", action="store_true", help="one JSON object per line on stdout")
    p.set_defaults(func=_run)

    p = sub.add_parser("ic", parents=[common], help="write initial conditions to an HDF5 file",
                       description="Generate initial conditions (centre of mass at rest at "
                                   "the origin) as a GADGET-style HDF5 file.")
    p.add_argument("kind", choices=IC_KINDS,
                   help="plummer: Plummer sphere in Hénon units (total mass 1, virial "
                        "radius 1); hernquist: Hernquist sphere (mass 1, scale radius 1); "
                        "cold_sphere: uniform sphere of mass 1 and radius 1 at rest (all "
                        "in internal units, G = 1; the file states 1 kpc and 1e10 Msun); "
                        "cosmo_sphere: a sphere cut from a ΛCDM realization at "
                        "cosmology.z_start, as a GADGET cosmological snapshot (settings "
                        "from --config and --set)")
    p.add_argument("-n", type=int, required=True, help="number of particles (cosmo_sphere: "
                   "grid points per side of the cube)")
    p.add_argument("-o", "--output", required=True, help="output HDF5 file")
    p.add_argument("--seed", type=int, default=0,
                   help="random seed; the same seed and n give the same particles "
                        "(default: %(default)s)")
    p.add_argument("--overwrite", action="store_true",
                   help="replace OUTPUT if it exists (otherwise that is an error)")
    p.add_argument("--config", help="cosmo_sphere: a config whose [cosmology], [ics] and "
                   "[units] settings to use")
    p.add_argument("--set", action="append", metavar="SECTION.NAME=VALUE",
                   help="cosmo_sphere: change a setting, e.g. --set ics.box=100 (repeatable)")
    p.set_defaults(func=_ic)

    p = sub.add_parser("halos", parents=[common], help="friends-of-friends halos of a "
                       "snapshot", description="Find friends-of-friends groups (linking "
                       "length b times the mean interparticle separation, from the "
                       "snapshot's cosmology) and write them as a GADGET-4 FOF catalogue "
                       "(fof_tab_NNN.hdf5: Group/GroupLen, GroupMass, GroupPos, GroupVel; "
                       "IDs/ID) beside the snapshot.")
    p.add_argument("snapshot", help="a cosmological snapshot (a file, a part or the stem "
                   "of a set)")
    p.add_argument("-b", type=float, default=0.2, help="linking parameter (default: "
                   "%(default)s)")
    p.add_argument("--min-len", type=int, default=20, help="fewest particles of a halo "
                   "(default: %(default)s)")
    p.add_argument("-o", "--output", help="catalogue file or folder (default: "
                   "fof_tab_NNN.hdf5 beside the snapshot)")
    p.add_argument("--overwrite", action="store_true", help="replace an existing catalogue")
    p.set_defaults(func=_halos)

    p = sub.add_parser("devices", parents=[common], help="list OpenCL devices (* = chosen)",
                       description="List the OpenCL devices of all platforms as P:D "
                                   "(platform and device index), name, type and compute "
                                   "units; * marks the one a run would use (from --device, "
                                   "else HYBRIDTREE_DEVICE, else PYOPENCL_CTX, else the "
                                   "first GPU or the biggest CPU device; never a "
                                   "simulator such as Oclgrind).")
    p.add_argument("--device", default=None,
                   help="device choice to resolve: P:D, a name substring, gpu or cpu")
    p.set_defaults(func=_devices)

    p = sub.add_parser("info", parents=[common], help="summary of a snapshot",
                       description="Summarise a GADGET-style HDF5 snapshot: particle "
                                   "counts, time (internal units and Gyr), units, total "
                                   "mass, centre of mass, Lagrangian radii, energies and "
                                   "the run's settings (internal units, G = 1, unless "
                                   "stated).")
    p.add_argument("snapshot", help="snapshot file, any part of a multi-file set (the "
                                    "whole set is read), the stem of either "
                                    "(out/snapshot_0002), or a run folder (its newest "
                                    "snapshot or restart point)")
    p.set_defaults(func=_info)

    p = sub.add_parser("plot", parents=[common], help="plot a run (needs matplotlib)",
                       description="Energy error and Lagrangian radii against time, and the "
                                   "surface density of an x-y projection of a snapshot, as "
                                   "PNG files in the folder; in the run's physical units "
                                   "(e.g. kpc, Myr, Msun/kpc^2), or N-body units for a "
                                   "snapshot that states none.")
    p.add_argument("folder", metavar="FOLDER_OR_SNAPSHOT",
                   help="a run's output folder, or one snapshot file (its projection, and "
                        "the diagnostics of the run folder it sits in)")
    p.add_argument("--snapshot", help="snapshot to project (default: the last one)")
    p.set_defaults(func=_plot)

    p = sub.add_parser("bench", parents=[common], help="time a force computation here",
                       description="Time one gravitational force computation of a Plummer "
                                   "sphere (Hénon units, softening 0.01) on this machine: "
                                   "best wall time of --repeat runs after a warm-up (which "
                                   "builds the kernels), interactions per second, and the "
                                   "relative acceleration error of 500 particles against "
                                   "float64 direct summation.")
    p.add_argument("-n", type=int, default=100_000,
                   help="number of particles (default: %(default)s)")
    p.add_argument("--method", choices=("tree", "direct"), default="tree",
                   help="tree: Barnes-Hut tree walk; direct: O(N^2) summation "
                        "(default: %(default)s)")
    p.add_argument("--theta", type=float, default=0.5,
                   help="tree opening angle (dimensionless; smaller is more accurate and "
                        "slower; default: %(default)s)")
    p.add_argument("--multipole", choices=("monopole", "quadrupole"), default="monopole",
                   help="order of the cells' multipole expansion (default: %(default)s)")
    p.add_argument("--device", default=None,
                   help="OpenCL device: P:D, a name substring, gpu or cpu (see "
                        "hybridtree devices; default: as for a run)")
    p.add_argument("--repeat", type=int, default=3,
                   help="timed repetitions after the warm-up; the fastest is reported "
                        "(default: %(default)s)")
    p.add_argument("--json", action="store_true",
                   help="print the result as one JSON object (times in s) instead of a "
                        "line of text")
    p.set_defaults(func=_bench)
    return parser


def _mpi_rank() -> tuple[int, int]:
    """(rank, size) from the MPI launcher's environment ((0, 1) without one)."""
    from .run.simulation import launched_processes
    size = launched_processes()
    for name in ("OMPI_COMM_WORLD_RANK", "PMI_RANK", "PMIX_RANK"):
        value = os.environ.get(name, "")
        if value.isdigit():
            return int(value), size
    return 0, size


def _collective(exc: BaseException) -> bool:
    """Errors every process of an MPI run raises together (reported once, by rank 0)."""
    from .config.settings import ConfigError
    from .parallel.comm import CollectiveError
    from .run.simulation import NumericalError, RunError
    return isinstance(exc, (CollectiveError, RunError, ConfigError, NumericalError))


def _abort_others(code: int) -> None:
    """One process failed on its own: stop all (instead of leaving them waiting in a
    collective call until the batch limit)."""
    mpi = sys.modules.get("mpi4py.MPI")
    if mpi is not None and mpi.Is_initialized() and not mpi.Is_finalized():
        sys.stderr.flush()
        # the launcher forwards our stderr through a pipe: an abort right away can tear
        # the job down before the one line that says what went wrong arrives (seen on a
        # loaded 2-core machine)
        time.sleep(0.5)
        mpi.COMM_WORLD.Abort(code)


def _take_over_ctrl_c() -> None:
    """From here on main() reports a SIGINT itself: put back Python's KeyboardInterrupt
    where hybridtree/__init__.py set the handler of the command's start-up.  Called only
    once main() has imported what every command needs (numpy, h5py, pyopencl): a
    KeyboardInterrupt raised inside an extension module's initialisation (pyopencl's,
    through nanobind) aborts the process (status 134) instead of reaching main()."""
    import signal

    from hybridtree import _interrupted_at_start
    if signal.getsignal(signal.SIGINT) is _interrupted_at_start:
        signal.signal(signal.SIGINT, signal.default_int_handler)


def main(argv: list[str] | None = None) -> int:
    args = None
    try:
        args = build_parser().parse_args(argv)
        from .run.simulation import RunInterrupted      # numpy, h5py, OpenCL: a while
        _take_over_ctrl_c()
    except KeyboardInterrupt:
        if args is not None and args.debug:
            raise
        print("hybridtree: interrupted", file=sys.stderr)
        return 130
    try:
        return args.func(args)
    except RunInterrupted as exc:
        if _mpi_rank()[0] == 0:
            print(f"hybridtree: {exc}", file=sys.stderr)
        return exc.code
    except KeyboardInterrupt:
        if args.debug:
            raise
        print("hybridtree: interrupted", file=sys.stderr)
        return 130
    except Exception as exc:  # user-facing: one clear line, exit 2
        rank, size = _mpi_rank()
        if args.debug:
            if size > 1 and not _collective(exc):
                import traceback
                traceback.print_exc()
                _abort_others(2)
            raise
        msg = " ".join(str(exc).split()) or type(exc).__name__
        if size == 1:
            print(f"hybridtree: error: {msg}", file=sys.stderr)
        elif _collective(exc):
            if rank == 0:
                print(f"hybridtree: error: {msg}", file=sys.stderr)
        else:
            print(f"hybridtree: error on process {rank} of {size}: {msg}", file=sys.stderr)
            _abort_others(2)
        return 2


if __name__ == "__main__":
    sys.exit(main())
