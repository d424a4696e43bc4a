"""Every OpenCL program build the code can request, for compile checks on other vendors.

A program is one file of ``cl/`` built with a set of ``-D`` defines (and with or without
``-cl-fast-relaxed-math``).  Nothing is listed here by hand: the files and their fast-math
choice are declared in :data:`hybridtree.device.kernels.FILES`, and the define sets by the
modules that compute them (``@option_sets`` functions, e.g. the walk's
:func:`hybridtree.gravity.walk_kernels.walk_option_sets` over :data:`WALK_AXES`); this
module imports those modules and asks :func:`hybridtree.device.kernels.requests` for every
device description of :data:`PROFILES` (whose limits steer the work-group sizes and
tunings).

The walk's axes multiply to thousands of combinations (hundreds of distinct programs per
device); the compile check takes a strength-2 covering array of them instead
(:func:`walk_cover`, :mod:`tools.covering`): for each device, every value of every axis,
every pair of values of two axes, and every define value and pair of define values of a
walk program, as the full product has them, occur in some compiled build.  ``full=True``
(``--full``) gives the whole product.

``python -m tools.kernel_builds [--full]`` lists the builds; :mod:`tools.vendor_compile`
compiles them with clang for AMD and Intel targets (tests/tools/test_vendor_compile.py).
"""

from __future__ import annotations

import functools
import hashlib
import inspect
import itertools
import sys
from collections.abc import Callable, Hashable, Iterable, Sequence
from dataclasses import dataclass, replace
from functools import lru_cache

import numpy as np

# the modules that declare option sets (imported for their declarations)
import hybridtree.device.probe  # noqa: F401
import hybridtree.device.reduce  # noqa: F401
import hybridtree.gravity.direct  # noqa: F401
import hybridtree.gravity.pm_compact  # noqa: F401
import hybridtree.gravity.pm_device  # noqa: F401
import hybridtree.gravity.tree.device_build  # noqa: F401
import hybridtree.gravity.tree.device_sort  # noqa: F401
import hybridtree.parallel.device_let  # noqa: F401
from hybridtree.device import kernels
from hybridtree.device.kernels import FILES, Recorder, Request
from hybridtree.device.runtime import DeviceInfo
from hybridtree.gravity import walk_kernels
from hybridtree.gravity.walk_kernels import WALK_AXES, walk_option_sets
from tools.covering import axis_pairs, cover_matrix, define_cover

__all__ = ["Build", "PROFILES", "WALK_AXES", "WalkRow", "all_builds", "declared_files",
           "option_cover", "profile_builds", "share_with", "walk_builds", "walk_cover",
           "walk_rows"]

GIB = 2**30

#: Device descriptions the builds are asked for: the limits that steer work-group sizes
#: and tunings, as these devices' OpenCL drivers report them (clinfo), plus an unknown GPU
#: with small limits (the safe fallback) and the CPU device of CI.  The math the device
#: probe chooses (rsqrt_mode, sum_mode) is as measured for Intel's CPU runtime; the Arc
#: profile takes the third way of 1/sqrt, so that every way is compiled.
PROFILES = {
    "nvidia-h100": DeviceInfo(0, 0, "NVIDIA CUDA", "NVIDIA H100 80GB HBM3", "gpu", 132,
                              "OpenCL 3.0 CUDA", vendor="nvidia", max_work_group_size=1024,
                              local_mem_size=49152, global_mem_size=80 * GIB,
                              max_mem_alloc_size=20 * GIB, fp64=True),
    "amd-mi250": DeviceInfo(0, 0, "AMD Accelerated Parallel Processing", "gfx90a", "gpu", 104,
                            "OpenCL 2.0 AMD-APP", vendor="amd", max_work_group_size=256,
                            local_mem_size=65536, global_mem_size=64 * GIB,
                            max_mem_alloc_size=55 * GIB, fp64=True),
    "amd-rx6800": DeviceInfo(0, 0, "AMD Accelerated Parallel Processing", "gfx1030", "gpu", 30,
                             "OpenCL 2.0 AMD-APP", vendor="amd", max_work_group_size=256,
                             local_mem_size=65536, global_mem_size=16 * GIB,
                             max_mem_alloc_size=14 * GIB, fp64=True),
    "intel-max-1550": DeviceInfo(0, 0, "Intel(R) OpenCL Graphics",
                                 "Intel(R) Data Center GPU Max 1550", "gpu", 448,
                                 "OpenCL 3.0 NEO", vendor="intel", max_work_group_size=1024,
                                 local_mem_size=131072, global_mem_size=64 * GIB,
                                 max_mem_alloc_size=64 * GIB, fp64=True),
    "intel-cpu": DeviceInfo(0, 0, "Intel(R) OpenCL", "Intel(R) Xeon(R) CPU", "cpu", 32,
                            "OpenCL 3.0 (Build 0)", vendor="intel", max_work_group_size=8192,
                            local_mem_size=262144, global_mem_size=128 * GIB,
                            max_mem_alloc_size=32 * GIB, fp64=True, rsqrt_mode=1,
                            sum_mode=1),
    "intel-arc-a770": DeviceInfo(0, 0, "Intel(R) OpenCL Graphics", "Intel(R) Arc(TM) A770",
                                 "gpu", 512, "OpenCL 3.0 NEO", vendor="intel",
                                 max_work_group_size=1024, local_mem_size=65536,
                                 global_mem_size=16 * GIB, max_mem_alloc_size=4 * GIB,
                                 fp64=False, rsqrt_mode=2),
    "small-gpu": DeviceInfo(0, 0, "Unknown", "small GPU", "gpu", 4, "OpenCL 1.2",
                            max_work_group_size=64, local_mem_size=16384,
                            global_mem_size=GIB, max_mem_alloc_size=GIB // 4, fp64=False),
    "pocl-cpu": DeviceInfo(0, 0, "Portable Computing Language", "pthread-cpu", "cpu", 2,
                           "OpenCL 3.0 PoCL", vendor="pocl", max_work_group_size=4096,
                           local_mem_size=524288, global_mem_size=12 * GIB,
                           max_mem_alloc_size=4 * GIB, fp64=True),
}

#: ``once(name, make)``: make()'s value, made once for several processes (None: each
#: process makes its own); :func:`share_with`
_ONCE: list = [None]


def share_with(once: Callable[[str, Callable], object] | None) -> None:
    """Make the walk's enumeration (:func:`walk_rows`, :func:`walk_cover`,
    :func:`walk_builds`: ~2.5 CPU s a device description) once for several processes:
    ``once(name, make)`` returns ``make()``'s value, made by whichever process asks first
    (the tests: :func:`tests.helpers.once_per_run`, for pytest-xdist's two workers, which
    each made all of it).  ``None``: each process makes its own (the default)."""
    _ONCE[0] = once


def _shared(fn: Callable) -> Callable:
    """Memoise ``fn`` (positional, hashable arguments) in this process and, where
    :func:`share_with` says so, across processes, under a name of ``fn`` and the repr of
    its arguments (a DeviceInfo's repr holds every field, also those its == leaves out)."""
    memo: dict = {}

    @functools.wraps(fn)
    def wrapper(*args):
        key = repr(args)
        if key not in memo:
            once = _ONCE[0]
            name = hashlib.sha256(key.encode()).hexdigest()[:20]
            memo[key] = fn(*args) if once is None else once(
                f"kernel_builds.{fn.__name__}-{name}", lambda: fn(*args))
        return memo[key]
    return wrapper


@dataclass(frozen=True)
class Build:
    """One program build: ``source`` (a file of cl/) with ``defines`` (sorted name, value
    pairs) and fast math or not; ``fp64``: whether it needs cl_khr_fp64 (the code builds
    it only on devices that report it); ``origin``: who asks for it, for messages."""

    source: str
    defines: tuple[tuple[str, str], ...]
    fast_math: bool
    fp64: bool
    origin: str

    @staticmethod
    def make(source: str, defines: dict | None, fast_math: bool, fp64: bool,
             origin: str) -> "Build":
        items = tuple(sorted((str(k), str(v)) for k, v in (defines or {}).items()))
        return Build(source, items, bool(fast_math), bool(fp64), origin)

    @property
    def key(self) -> tuple:
        """What makes two builds the same program."""
        return (self.source, self.defines, self.fast_math)

    def options(self) -> list[str]:
        """The compiler options :meth:`hybridtree.device.runtime.Runtime.program` passes."""
        opts = [f"-D{k}={v}" for k, v in self.defines]
        opts.append("-cl-std=CL1.2")
        if self.fast_math:
            opts.append("-cl-fast-relaxed-math")
        return opts

    def describe(self) -> str:
        d = " ".join(f"{k}={v}" for k, v in self.defines) or "(no defines)"
        return f"{self.source} [{d}]{' fast-math' if self.fast_math else ''} <- {self.origin}"


def _build(r: Request, name: str) -> Build:
    return Build(r.file, r.defines, r.fast_math, r.fp64, f"{r.origin} on {name}")


def walk_builds(name: str, info: DeviceInfo) -> list[Build]:
    """The walk programs (treewalk.cl, walklist.cl) a device asks for over every
    combination of :data:`WALK_AXES`."""
    return [_build(r, name) for r in _walk_requests(info, _axes_key())]


@_shared
def _walk_requests(info: DeviceInfo, _axes: tuple) -> tuple[Request, ...]:
    return tuple(Request.make(file, defines, "walk_kernels.walk_option_sets")
                 for file, defines in walk_option_sets(info))


@dataclass(frozen=True)
class WalkRow:
    """One combination of :data:`WALK_AXES` that the walk accepts: ``index`` (the value's
    position on each axis) and the programs (file, defines) :func:`walk_kernel` asks for."""

    index: tuple[int, ...]
    builds: tuple[tuple[str, tuple[tuple[str, str], ...]], ...]


@lru_cache(maxsize=None)
def _define_pairs(build: tuple[str, tuple[tuple[str, str], ...]]) -> frozenset:
    file, items = build
    return frozenset([(file, x) for x in items]
                     + [(file, x, y) for k, x in enumerate(items) for y in items[k + 1:]])


def _held(rows: Sequence[WalkRow], sizes: Sequence[int]) -> np.ndarray:
    """What each row puts into a compile, as :func:`tools.covering.cover_matrix` takes it
    (rows x features): its axis values and their pairs (:func:`tools.covering.axis_pairs`),
    and per program every define (name, value) and every pair of them (named once per
    distinct set of programs: rows share a few hundred)."""
    programs: dict[tuple, int] = {}
    which = np.array([programs.setdefault(r.builds, len(programs)) for r in rows], np.int64)
    ids: dict[Hashable, int] = {}
    sets = [[ids.setdefault(x, len(ids)) for b in builds for x in _define_pairs(b)]
            for builds in programs]
    defines = np.zeros((len(programs), len(ids)), dtype=bool)
    for k, cols in enumerate(sets):
        defines[k, cols] = True
    return np.hstack([axis_pairs(np.array([r.index for r in rows]), sizes), defines[which]])


def _axes_key() -> tuple:
    return tuple((k, tuple(map(repr, v))) for k, v in walk_kernels.WALK_AXES.items())


def walk_rows(info: DeviceInfo) -> list[WalkRow]:
    """The combinations of :data:`WALK_AXES` the walk accepts on a device of description
    ``info``, in the product's order, each with its programs: the rows of
    :func:`hybridtree.gravity.walk_kernels.walk_option_sets`, one by one (the same calls;
    tests/tools/test_vendor_compile.py checks that their programs are the same)."""
    return list(_walk_rows(info, _axes_key()))


@_shared
def _walk_rows(info: DeviceInfo, _axes: tuple) -> tuple[WalkRow, ...]:
    axes = walk_kernels.WALK_AXES
    params = inspect.signature(walk_kernels.walk_kernel).parameters
    # which axes are the walk's parameters and which its defines, named once: the loop
    # below runs ~1.5e5 times a device
    named = [(a, k) for a, k in enumerate(axes) if k in params]
    defines = [(a, k) for a, k in enumerate(axes) if k.isupper()]
    rows = []
    for index, combo in zip(itertools.product(*(range(len(v)) for v in axes.values())),
                            itertools.product(*axes.values())):
        kw = {k: combo[a] for a, k in named}
        extra = {k: combo[a] for a, k in defines if combo[a] is not None}
        if extra:
            kw["options"] = {**(kw.get("options") or {}), **extra}
        rec = Recorder(info)
        try:
            walk_kernels.walk_kernel(rec, **kw)
        except ValueError:              # refused: the code never launches it
            continue
        rows.append(WalkRow(index, tuple(
            (file, tuple(sorted((str(k), str(v)) for k, v in (d or {}).items())))
            for file, d in rec.builds)))
    return tuple(rows)


def walk_cover(info: DeviceInfo) -> list[WalkRow]:
    """A strength-2 covering array of the walk's accepted combinations on a device of
    description ``info`` (:mod:`tools.covering`): rows that together hold every value and pair of
    values of the axes, and every define (name, value) and pair of them of a walk
    program, that some accepted row holds (:func:`_held`).  Deterministic."""
    rows = walk_rows(info)
    return [rows[i] for i in _cover(info, _axes_key())]


@_shared
def _cover(info: DeviceInfo, axes: tuple) -> tuple[int, ...]:
    return tuple(cover_matrix(_held(_walk_rows(info, axes), [len(v) for _, v in axes])))


@lru_cache(maxsize=None)
def _requests(info: DeviceInfo, _axes: tuple, walk: bool) -> tuple[Request, ...]:
    """:func:`hybridtree.device.kernels.requests`, with or without the walk's option sets:
    the same function's steps, the walk's from :func:`_walk_requests` (made once, not
    again for each ``full`` listing; tests/tools/test_vendor_compile.py compares the
    result with ``requests`` itself)."""
    out = [Request.make(f.name, None, "kernels.FILES") for f in FILES.values() if f.plain]
    for origin, fn in kernels._OPTION_SETS.items():
        if origin != _WALK_ORIGIN:
            out += [Request.make(file, defines, origin) for file, defines in fn(info)]
        elif walk:
            out += [replace(r, origin=origin) for r in _walk_requests(info, _axes)]
    return tuple(r for r in out if info.fp64 or not r.fp64)


_WALK_ORIGIN = f"{walk_option_sets.__module__}.{walk_option_sets.__qualname__}"


def option_cover(reqs: Sequence[Request]) -> list[Request]:
    """A strength-2 covering array of each origin's requests (:func:`tools.covering.define_cover`,
    per origin and file: every define value, "absent" included, and every pair of define
    values that the origin's programs of that file hold; every file), in their order."""
    by_origin: dict[str, list[Request]] = {}
    for r in reqs:
        by_origin.setdefault(r.origin, []).append(r)
    keep = {id(rs[i]) for rs in by_origin.values()
            for i in define_cover([(r.file, r.defines) for r in rs])}
    return [r for r in reqs if id(r) in keep]


def profile_builds(name: str, info: DeviceInfo, full: bool = False) -> list[Build]:
    """Every build a device of description ``info`` can ask for
    (:func:`hybridtree.device.kernels.requests`); unless ``full``, the walk's builds of
    :func:`walk_cover` and of every other option set its :func:`option_cover` only."""
    reqs = _requests(info, _axes_key(), full)
    out = [_build(r, name) for r in (reqs if full else option_cover(reqs))]
    if not full:
        out += [_build(Request.make(file, dict(items), f"{_WALK_ORIGIN} (covering array)"),
                       name)
                for row in walk_cover(info) for file, items in row.builds]
    return [b for b in out if info.fp64 or not b.fp64]


def all_builds(profiles: Iterable[str] | None = None, full: bool = False) -> list[Build]:
    """Every distinct build of the devices ``profiles`` (names of :data:`PROFILES`,
    default all; first origin kept); the walk's covering array unless ``full``
    (:func:`profile_builds`)."""
    names = list(PROFILES if profiles is None else profiles)
    seen: dict[tuple, Build] = {}
    for name in names:
        for b in profile_builds(name, PROFILES[name], full):
            seen.setdefault(b.key, b)
    return sorted(seen.values(), key=lambda b: b.key)


def declared_files() -> list[str]:
    """The kernel files the registry declares (:data:`hybridtree.device.kernels.FILES`)."""
    return sorted(FILES)


def main() -> None:
    builds = all_builds(full="--full" in sys.argv[1:])
    for b in builds:
        print(b.describe())
    print(f"{len(builds)} builds of {len({b.source for b in builds})} files")


if __name__ == "__main__":
    main()
