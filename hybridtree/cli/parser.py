"""The command line's arguments: :func:`build_parser`.  Options that stand for a setting
take their default, choices and rule from :data:`hybridtree.config.SCHEMA`."""

from __future__ import annotations

import argparse

from ..config import SCHEMA
from . import commands

__all__ = ["build_parser"]


class _Parser(argparse.ArgumentParser):
    """argparse, but a usage mistake is one line (and exit status 2)."""

    def error(self, message: str) -> None:  # type: ignore[override]
        self.exit(2, f"{self.prog}: error: {message} (see {self.prog} --help)\n")


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
    p.set_defaults(func=commands.run)

    p = sub.add_parser("ic", parents=[common], help="write initial conditions to an HDF5 file",
                       description="Generate initial conditions as a GADGET-style HDF5 "
                                   "file: plummer, hernquist, cold_sphere and galaxy with "
                                   "the centre of mass at rest at the origin; cosmo_sphere "
                                   "centred on the origin (the centre of its Hubble flow), "
                                   "its centre of mass near it and moving with the bulk "
                                   "velocity of its realization.")
    p.add_argument("kind", choices=commands.IC_KINDS,
                   help="plummer: Plummer sphere in Hénon units (total mass 1, virial "
                        "radius 1); hernquist: Hernquist sphere (mass 1, scale radius 1); "
                        "cold_sphere: uniform sphere of mass 1 and radius 1 at rest (all "
                        "in internal units, G = 1; the file states 1 kpc and 1e10 Msun); "
                        "cosmo_sphere: a sphere cut from a ΛCDM realization at "
                        "cosmology.z_start, as a GADGET cosmological snapshot (settings "
                        "from --config and --set); galaxy: a disk galaxy in equilibrium "
                        "(--set ics.model=milky_way or m31; halo PartType1, disk 2, bulge 3; "
                        "kpc, 1e10 Msun)")
    p.add_argument("-n", type=int, required=True, help="number of particles (cosmo_sphere: "
                   "grid points per side of the cube)")
    p.add_argument("-o", "--output", required=True, help="output HDF5 file")
    p.add_argument("--seed", type=int, default=SCHEMA["ics"]["seed"].default, action=_Given,
                   help="random seed; the same seed and n give the same particles "
                        "(default: ics.seed of --config and --set, else %(default)s)")
    p.add_argument("--overwrite", action="store_true",
                   help="replace OUTPUT if it exists (otherwise that is an error)")
    p.add_argument("--config", help="cosmo_sphere, galaxy: a config whose [cosmology], [ics] "
                   "and [units] settings to use")
    p.add_argument("--set", action="append", metavar="SECTION.NAME=VALUE",
                   help="cosmo_sphere, galaxy: change a setting, e.g. --set ics.box=100 or "
                        "--set ics.model=m31 (repeatable)")
    p.set_defaults(func=commands.ic, seed_given=False)

    p = sub.add_parser("halos", parents=[common], help="friends-of-friends halos of a "
                       "snapshot", description="Find friends-of-friends groups (linking "
                       "length b times the mean interparticle separation, from the "
                       "snapshot's cosmology) and write them as a GADGET-4 FOF catalogue "
                       "(fof_tab_NNN.hdf5: Group/GroupLen, GroupMass, GroupPos, GroupVel; "
                       "IDs/ID) beside the snapshot.")
    p.add_argument("snapshot", help="a cosmological snapshot (a file, a part or the stem "
                   "of a set)")
    p.add_argument("-b", type=_positive(float), default=0.2, help="linking parameter (default: "
                   "%(default)s)")
    p.add_argument("--link", type=_positive(float), default=None, metavar="LENGTH",
                   help="the linking length itself, in the snapshot's length unit "
                        "(comoving, per h for a cosmological one), instead of -b times the "
                        "mean separation: a snapshot that is not cosmological needs it")
    p.add_argument("--min-len", type=_positive(int), default=20, help="fewest particles of a halo "
                   "(default: %(default)s)")
    p.add_argument("-o", "--output", help="catalogue file or folder (default: "
                   "fof_tab_NNN.hdf5 beside the snapshot)")
    p.add_argument("--overwrite", action="store_true", help="replace an existing catalogue")
    p.set_defaults(func=commands.halos)

    p = sub.add_parser("pk", parents=[common], help="matter power spectrum of a periodic "
                       "snapshot", description="The matter power spectrum P(k) of a periodic "
                       "GADGET-style snapshot (Header/BoxSize > 0; all particle types, "
                       "mass-weighted): mesh assignment, window deconvolution, interlacing, "
                       "shot noise V sum(m^2)/(sum m)^2 subtracted, shells of width 2 pi/box "
                       "up to the mesh's Nyquist frequency.  A text table of k [h/Mpc], "
                       "P [(Mpc/h)^3] and the modes per shell, below '#' lines giving box, "
                       "mesh, N, shot noise and z = 1/Time - 1; lengths from the file's "
                       "UnitLength_in_cm (GADGET's default: kpc/h), comoving per h.")
    p.add_argument("snapshot", help="a periodic snapshot (a file, a part or the stem of a "
                   "set)")
    p.add_argument("--mesh", type=_positive(int), default=None, help="mesh points per side "
                   "(default: the smallest power of two >= 2 N^(1/3), from 8 to 512)")
    p.add_argument("--order", choices=("cic", "tsc"), default="tsc", help="mass assignment: "
                   "cic cloud-in-cell, tsc triangular-shaped cloud (default: %(default)s)")
    p.add_argument("--no-interlace", action="store_true", help="one mesh, without the "
                   "second one shifted by half a cell that cancels the odd aliases")
    p.add_argument("--out", metavar="FILE", help="write the table to FILE (replaced if it "
                   "exists) instead of stdout")
    p.set_defaults(func=commands.pk)

    p = sub.add_parser("devices", parents=[common], help="list OpenCL devices (* = chosen)",
                       description="List the OpenCL devices of all platforms as P:D "
                                   "(platform and device index), name, type and compute "
                                   "units; * marks the one a run would use (from --device, "
                                   "else HYBRIDTREE_DEVICE, else PYOPENCL_CTX, else the "
                                   "first GPU or the biggest CPU device; never a "
                                   "simulator such as Oclgrind), with the largest N each "
                                   "takes for a Plummer run and a periodic box with the "
                                   "default settings (the run's memory plan).")
    p.add_argument("--device", default=None,
                   help="device choice to resolve: P:D, a name substring, gpu or cpu")
    p.set_defaults(func=commands.devices)

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
    p.set_defaults(func=commands.info)

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
    p.set_defaults(func=commands.plot)

    gravity = SCHEMA["gravity"]
    p = sub.add_parser("bench", parents=[common], help="time a force computation here",
                       description="Time one gravitational force computation of a Plummer "
                                   f"sphere (Hénon units, softening {gravity['eps'].default}) "
                                   "on this machine: best wall time of --repeat runs after "
                                   "a warm-up (which builds the kernels), interactions per "
                                   "second, and the relative acceleration error of 500 "
                                   "particles against float64 direct summation.")
    p.add_argument("-n", type=int, default=100_000,    # a bench's size, not ics.n
                   help="number of particles (default: %(default)s)")
    p.add_argument("--method", choices=gravity["method"].choices,
                   default=gravity["method"].default,
                   help="tree: Barnes-Hut tree walk; direct: O(N^2) summation "
                        "(default: %(default)s)")
    p.add_argument("--theta", type=_setting("gravity", "theta"),
                   default=gravity["theta"].default,
                   help="tree opening angle (dimensionless; smaller is more accurate and "
                        "slower; default: %(default)s)")
    p.add_argument("--multipole", choices=gravity["multipole"].choices,
                   default=gravity["multipole"].default,
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
    p.set_defaults(func=commands.bench)
    return parser


class _Given(argparse.Action):
    """Store the option's value and note that it was given (``args.<dest>_given``): an
    option whose default must not override a config's setting."""

    def __call__(self, parser, namespace, values, option_string=None):
        setattr(namespace, self.dest, values)
        setattr(namespace, f"{self.dest}_given", True)


def _setting(section: str, name: str):
    """The argparse type of an option that stands for the setting ``section.name``: its
    kind, and its rule (a value outside it is a usage error, named by the rule)."""
    opt = SCHEMA[section][name]

    def convert(text: str):
        value = opt.kind(text)
        if opt.check is not None and not opt.check(value):
            raise argparse.ArgumentTypeError(f"{text} is not allowed: {opt.rule}")
        return value
    convert.__name__ = opt.kind.__name__     # argparse's message: "invalid float value"
    return convert


def _positive(kind: type):
    """The argparse type of a number that must be > 0."""
    def convert(text: str):
        value = kind(text)
        if not value > 0:
            raise argparse.ArgumentTypeError(f"{text} is not allowed: must be > 0")
        return value
    convert.__name__ = kind.__name__
    return convert
