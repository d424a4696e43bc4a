"""Every OpenCL program build the code can request, for compile checks on other vendors.

A program is one file of ``cl/`` built with a set of ``-D`` defines (and with or without
``-cl-fast-relaxed-math``).  Nothing is listed here by hand: the files and their fast-math
choice are declared in :data:`hybridtree.device.kernels.FILES`, and the define sets by the
modules that compute them (``@option_sets`` functions, e.g. the walk's
:func:`hybridtree.gravity.walk_kernels.walk_option_sets` over :data:`WALK_AXES`); this
module imports those modules and asks :func:`hybridtree.device.kernels.requests` for every
device description of :data:`PROFILES` (whose limits steer the work-group sizes and
tunings).

``python -m tools.kernel_builds`` lists the builds; :mod:`tools.vendor_compile`
compiles them with clang for AMD and Intel targets (tests/tools/test_vendor_compile.py).
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass

# the modules that declare option sets (imported for their declarations)
import hybridtree.device.probe  # noqa: F401
import hybridtree.device.reduce  # noqa: F401
import hybridtree.gravity.direct  # noqa: F401
import hybridtree.gravity.pm_device  # noqa: F401
import hybridtree.gravity.tree.device_build  # noqa: F401
import hybridtree.gravity.tree.device_sort  # noqa: F401
import hybridtree.parallel.device_let  # noqa: F401
from hybridtree.device.kernels import FILES, Request, requests
from hybridtree.device.runtime import DeviceInfo
from hybridtree.gravity.walk_kernels import WALK_AXES, walk_option_sets

__all__ = ["Build", "PROFILES", "WALK_AXES", "all_builds", "declared_files", "profile_builds",
           "walk_builds"]

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
    return [_build(Request.make(file, defines, "walk_kernels.walk_option_sets"), name)
            for file, defines in walk_option_sets(info)]


def profile_builds(name: str, info: DeviceInfo) -> list[Build]:
    """Every build a device of description ``info`` can ask for
    (:func:`hybridtree.device.kernels.requests`)."""
    return [_build(r, name) for r in requests(info)]


def all_builds(profiles: Iterable[str] | None = None) -> list[Build]:
    """Every distinct build of the devices ``profiles`` (names of :data:`PROFILES`,
    default all; first origin kept)."""
    names = list(PROFILES if profiles is None else profiles)
    seen: dict[tuple, Build] = {}
    for name in names:
        for b in profile_builds(name, PROFILES[name]):
            seen.setdefault(b.key, b)
    return sorted(seen.values(), key=lambda b: b.key)


def declared_files() -> list[str]:
    """The kernel files the registry declares (:data:`hybridtree.device.kernels.FILES`)."""
    return sorted(FILES)


def main() -> None:
    builds = all_builds()
    for b in builds:
        print(b.describe())
    print(f"{len(builds)} builds of {len({b.source for b in builds})} files")


if __name__ == "__main__":
    main()
