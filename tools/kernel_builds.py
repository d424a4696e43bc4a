"""Every OpenCL program build the code can request, for compile checks on other vendors.

A program is one file of ``cl/`` built with a set of ``-D`` defines (and with or without
``-cl-fast-relaxed-math``).  The defines are not listed here by hand: they come from the
functions the launch code itself uses (:func:`hybridtree.gravity.direct.direct_defines`,
:func:`hybridtree.gravity.tree.device_sort.sort_defines`, :func:`hybridtree.gravity.walk._walk_kernel`,
...), asked for every device description of :data:`PROFILES` (whose limits steer the
work-group sizes and tunings) and every combination of the options a run can set
(:data:`WALK_AXES` for the tree walks).  Files that the code builds without defines are
found by reading the code (:func:`call_sites`), so that a new kernel file is compiled
without an entry here.

``python -m tools.kernel_builds`` lists the builds; :mod:`tools.vendor_compile`
compiles them with clang for AMD and Intel targets (tests/test_vendor_compile.py).
"""

from __future__ import annotations

import ast
import inspect
import itertools
from collections.abc import Iterable
from dataclasses import dataclass
from pathlib import Path

from hybridtree.gravity.direct import direct_defines
from hybridtree.device.runtime import DeviceInfo, _kernel_dir
from hybridtree.parallel.device_let import let_defines
from hybridtree.device.reduce import TRIALS, Reducer, reduce_defines, reduce_work_group
from hybridtree.gravity.splitting import CHANGEOVERS, Changeover
from hybridtree.gravity.tree import MULTIPOLES
from hybridtree.gravity.tree.device_build import extent_work_group, moment_defines
from hybridtree.gravity.tree.device_sort import TUNING, fit_tuning, sort_defines
from hybridtree.gravity import walk as treewalk

__all__ = ["Build", "PROFILES", "WALK_AXES", "all_builds", "call_sites", "walk_builds"]

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

#: The tree walk's option axes: every combination is asked of
#: :func:`hybridtree.gravity.walk._walk_kernel`; those it refuses (ValueError) are ones the code
#: never requests.  A key naming a parameter of ``_walk_kernel`` is passed as that
#: argument; an upper-case key is an extra kernel define (``options``; None: not set).  A
#: new option of the walk is one line here.
WALK_AXES: dict[str, tuple] = {
    "n_sinks": (1000, 1 << 23),                 # either side of LARGE_GROUP's switch
    "n_group": (None, 1024),                    # the kind's default, the largest allowed
    "n_leaf": (16, 1024),                       # the default, the largest allowed (CAP)
    "quad": (False, True),
    "eps": (0.0, 0.01),                         # ZERO_GUARD 1 and 0
    "part": ("full", "soft", "hard"),
    "split": (None,) + tuple(Changeover(0.01, 0.1, shape) for shape in CHANGEOVERS),
    # the opening criterion: geometric, or relative with (alpha, a_old, theta_min) (OPENING,
    # INV_THETA_MIN; a_old is no define)
    "floor": (None, (0.005, None, 0.5)),
    "options": (None,),
}


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
        """The compiler options :meth:`hybridtree.device.choice.Runtime.program` passes."""
        opts = [f"-D{k}={v}" for k, v in self.defines]
        opts.append("-cl-std=CL1.2")
        if self.fast_math:
            opts.append("-cl-fast-relaxed-math")
        return opts

    def describe(self) -> str:
        d = " ".join(f"{k}={v}" for k, v in self.defines) or "(no defines)"
        return f"{self.source} [{d}]{' fast-math' if self.fast_math else ''} <- {self.origin}"


class _Recorder:
    """Stands in for :class:`hybridtree.device.choice.Runtime` where launch code only asks for
    kernels: records every build and answers work-group limits from the description."""

    def __init__(self, info: DeviceInfo, origin: str) -> None:
        self.info = info
        self.origin = origin
        self.builds: list[Build] = []

    @property
    def has_fp64(self) -> bool:
        return self.info.fp64

    def program(self, source_name: str, defines: dict | None = None, fast_math: bool = True):
        self.builds.append(Build.make(source_name, defines, fast_math, False, self.origin))
        return (source_name, tuple(sorted((defines or {}).items())), fast_math)

    def kernel(self, source_name: str, kernel_name: str, defines: dict | None = None,
               fast_math: bool = True):
        return self.program(source_name, defines, fast_math) + (kernel_name,)

    def max_work_group_size(self, kernel) -> int:
        return self.info.work_group_limit()

    def local_mem_used(self, kernel) -> int:
        return 0           # what a build takes is the compilers' to say (vendor_compile)


def walk_builds(name: str, info: DeviceInfo) -> list[Build]:
    """The walk programs (treewalk.cl, walklist.cl) a device asks for over every
    combination of :data:`WALK_AXES`."""
    params = inspect.signature(treewalk._walk_kernel).parameters
    args = [p for p in params if p != "rt"]
    for axis in WALK_AXES:
        if axis not in params and not axis.isupper():
            raise KeyError(f"WALK_AXES names {axis!r}, which is neither a parameter of "
                           f"treewalk._walk_kernel ({', '.join(args)}) nor a define")
    missing = [p for p in args if p not in WALK_AXES
               and params[p].default is inspect.Parameter.empty]
    if missing:
        raise KeyError(f"treewalk._walk_kernel takes {', '.join(missing)}, which WALK_AXES "
                       f"does not give: add its values there")
    rec = _Recorder(info, f"treewalk._walk_kernel on {name}")
    keys = list(WALK_AXES)
    for combo in itertools.product(*WALK_AXES.values()):
        kw = {k: v for k, v in zip(keys, combo) if k in params}
        extra = {k: v for k, v in zip(keys, combo) if k.isupper() and v is not None}
        if extra:
            kw["options"] = {**(kw.get("options") or {}), **extra}
        done = len(rec.builds)
        try:        # records the evaluation kernel's program (walk_lists: the same one)
            treewalk._walk_kernel(rec, **kw)
        except ValueError:              # a combination the code refuses: never launched
            del rec.builds[done:]
    return rec.builds


def profile_builds(name: str, info: DeviceInfo) -> list[Build]:
    """Every build a device of description ``info`` can ask for."""
    out: list[Build] = []

    def add(source: str, defines: dict | None, fast_math: bool, fp64: bool, who: str) -> None:
        if fp64 and not info.fp64:      # the code checks Runtime.has_fp64 first
            return
        out.append(Build.make(source, defines, fast_math, fp64, f"{who} on {name}"))

    for split, eps in itertools.product((True, False), (0.0, 0.01)):
        add("direct.cl", direct_defines(info, eps, split), True, False,
            "direct.direct_defines")
    for multipole in MULTIPOLES:
        add("treebuild.cl", moment_defines(multipole), False, False,
            "device_build.moment_defines")
    add("sort.cl", sort_defines(fit_tuning(TUNING.get(info.kind, TUNING["gpu"]), info)), False,
        False, "device_sort.fit_tuning")
    add("prepare.cl", {"WG": extent_work_group(info)}, False, True,
        "device_build.extent_work_group")
    fractions = inspect.signature(Reducer.lagrangian_radii).parameters["fractions"].default
    for n_fractions in sorted({len(fractions), 1}):
        add("reduce.cl", reduce_defines(reduce_work_group(info), n_fractions * TRIALS,
                                        info.sum_mode), False, True, "reduce.reduce_defines")
    for hard, quad in itertools.product((False, True), (None, False, True)):
        add("let.cl", let_defines(hard, quad), False, True, "device_let.let_defines")
    return out + walk_builds(name, info)


@dataclass(frozen=True)
class CallSite:
    """A call ``<runtime>.kernel("file.cl", ...)`` or ``.program(...)`` in the package."""

    source: str
    where: str              # module path:line
    plain: bool             # may build without defines (none given, None, or a variable)
    fast_math: bool


def call_sites(package: Path | None = None) -> list[CallSite]:
    """Every ``.kernel(...)``/``.program(...)`` call of the package whose first argument is
    a literal ``*.cl`` file name (calls with a computed name, the walks', are enumerated by
    :func:`walk_builds`)."""
    root = package or Path(__file__).resolve().parent.parent / "hybridtree"
    sites = []
    for path in sorted(root.rglob("*.py")):
        tree = ast.parse(path.read_text(), str(path))
        for node in ast.walk(tree):
            if not (isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute)
                    and node.func.attr in ("kernel", "program") and node.args
                    and isinstance(node.args[0], ast.Constant)
                    and str(node.args[0].value).endswith(".cl")):
                continue
            pos = 2 if node.func.attr == "kernel" else 1
            kw = {k.arg: k.value for k in node.keywords}
            d = node.args[pos] if len(node.args) > pos else kw.get("defines")
            fm = node.args[pos + 1] if len(node.args) > pos + 1 else kw.get("fast_math")
            # a variable may hold None (launch helpers' default): the plain build too
            plain = d is None or isinstance(d, ast.Name) or (isinstance(d, ast.Constant)
                                                              and d.value is None)
            fast = True if fm is None else bool(getattr(fm, "value", True))
            sites.append(CallSite(node.args[0].value,
                                  f"{path.relative_to(root.parent)}:{node.lineno}", plain, fast))
    return sites


def all_builds(profiles: Iterable[str] | None = None) -> list[Build]:
    """Every distinct build of the devices ``profiles`` (names of :data:`PROFILES`,
    default all; first origin kept), plus the default build (no defines) of every file that
    some call site may build without defines (where the devices have double precision, or
    the file needs none)."""
    names = list(PROFILES if profiles is None else profiles)
    seen: dict[tuple, Build] = {}
    for name in names:
        for b in profile_builds(name, PROFILES[name]):
            seen.setdefault(b.key, b)
    fp64 = any(PROFILES[name].fp64 for name in names)
    for site in call_sites():
        needs = _needs_fp64(site.source)
        if site.plain and (fp64 or not needs):
            b = Build.make(site.source, None, site.fast_math, needs, site.where)
            seen.setdefault(b.key, b)
    return sorted(seen.values(), key=lambda b: b.key)


def _needs_fp64(source: str) -> bool:
    """Whether a kernel file enables cl_khr_fp64 (then it is built only where it exists)."""
    return "cl_khr_fp64 : enable" in (_kernel_dir() / source).read_text()


def main() -> None:
    builds = all_builds()
    for b in builds:
        print(b.describe())
    print(f"{len(builds)} builds of {len({b.source for b in builds})} files")


if __name__ == "__main__":
    main()
