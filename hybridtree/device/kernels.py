"""The kernel registry and the one launcher.

Every file of ``cl/`` that the code builds is declared once in :data:`FILES`: whether it
is built with ``-cl-fast-relaxed-math`` (the accuracy tests decide where that is
allowed) and whether some of its kernels are built without defines.  The define sets a
device may ask for are declared by the modules that compute them, with
:func:`option_sets` (a function of the device description that gives (file, defines)
pairs: the walk's variants, the sort's tuning, ...); :func:`requests` lists them all for
one device description, which is what tools/kernel_builds.py compiles for other vendors.

:func:`kernel` builds (once: :meth:`Runtime.kernel` caches) a kernel of a declared file,
:func:`launch` fits the work-group and enqueues it.  Sources and build caching stay in
:mod:`hybridtree.device.runtime`: the options a file is built with are the ones it
always had, so the binaries and results are the same bits.

The one exception: the FFTs of the periodic mesh (:mod:`hybridtree.gravity.pm_device`,
:mod:`hybridtree.gravity.pm_slabs`) are reikna's, whose kernels reikna generates, builds
and enqueues itself on the runtime's queue (no file of ``cl/``; the vendor check does
not compile them).  Every kernel of ``cl/``, the mesh's included, goes through
:func:`launch`.

This module imports nothing above the device layer; the modules that declare option
sets register them when imported (tools/kernel_builds.py imports them all).
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass
from functools import lru_cache
from types import MappingProxyType

import numpy as np
import pyopencl as cl

from .runtime import DeviceInfo, Runtime, kernel_source

__all__ = ["FILES", "KernelFile", "Recorder", "Request", "kernel", "launch", "option_sets",
           "requests", "spread_local"]


@dataclass(frozen=True)
class KernelFile:
    """One file of ``cl/`` that is built on its own (not only included).

    ``fast_math``: built with ``-cl-fast-relaxed-math``; ``plain``: some of its kernels
    are built without defines (its default build)."""

    name: str
    fast_math: bool
    plain: bool

    @property
    def fp64(self) -> bool:
        """Whether the file enables cl_khr_fp64 (the code builds it only where it exists)."""
        return _needs_fp64(self.name)


FILES: Mapping[str, KernelFile] = MappingProxyType({f.name: f for f in (
    KernelFile("blocks.cl", fast_math=False, plain=True),      # walk and time-bin blocks
    KernelFile("direct.cl", fast_math=True, plain=False),      # direct summation
    KernelFile("fft.cl", fast_math=False, plain=False),        # float32 mesh's FFT lines
    KernelFile("fof.cl", fast_math=False, plain=True),         # friends of friends (halos)
    KernelFile("let.cl", fast_math=False, plain=True),         # LET selection, migration
    KernelFile("pm.cl", fast_math=False, plain=False),         # periodic boxes' mesh (PM)
    KernelFile("pm32.cl", fast_math=False, plain=False),       # compact float32 mesh
    KernelFile("power.cl", fast_math=False, plain=True),       # P(k)'s shell sums
    KernelFile("prepare.cl", fast_math=False, plain=True),     # extent (WG), unsort64, ...
    KernelFile("probe.cl", fast_math=True, plain=True),        # the device probe's 1/sqrt
    KernelFile("reduce.cl", fast_math=False, plain=False),     # deterministic reductions
    KernelFile("sort.cl", fast_math=False, plain=False),       # radix sort and scans
    KernelFile("state.cl", fast_math=False, plain=True),       # the integrator's state
    KernelFile("treebuild.cl", fast_math=False, plain=True),   # device tree build
    KernelFile("treewalk.cl", fast_math=True, plain=False),    # group walk (one kernel)
    KernelFile("walklist.cl", fast_math=True, plain=False),    # list walk + evaluation
)})


@lru_cache(maxsize=None)
def _needs_fp64(name: str) -> bool:
    return "cl_khr_fp64 : enable" in kernel_source(name)


def _declared(file: str) -> KernelFile:
    try:
        return FILES[file]
    except KeyError:
        raise KeyError(f"kernel file {file!r} is not declared in "
                       f"hybridtree.device.kernels.FILES") from None


def kernel(rt: Runtime, file: str, name: str, defines: dict | None = None) -> cl.Kernel:
    """Kernel ``name`` of the declared ``cl/<file>`` built with ``defines`` (and the file's
    fast-math choice); built once per runtime."""
    return rt.kernel(file, name, defines, fast_math=_declared(file).fast_math)


def spread_local(info: DeviceInfo) -> int:
    """Preferred work-group of the element-wise kernels that spread over a device: 256 on
    GPUs, 64 elsewhere (CPU devices run a work-group per core)."""
    return 256 if info.kind == "gpu" else 64


def launch(rt: Runtime, file: str, name: str, items: int, *args,
           defines: dict | None = None, local: int | None = 256, fixed: bool = False
           ) -> None:
    """Enqueue kernel ``name`` of ``cl/<file>`` (:func:`kernel`) over ``items`` work-items,
    rounded up to whole work-groups; nothing for ``items`` <= 0.

    ``local``: the preferred work-group size, lowered to what the built kernel allows on
    the device (kernels check their bounds); with ``fixed`` it is used as given (a
    kernel built for that size); None lets the driver choose (and no rounding).

    The kernel, its work-group and its scalar argument types are looked up once per
    runtime and call signature (:func:`_prepared`): a launch then costs one pyopencl call
    that packs the scalars, not an argument-by-argument conversion (about 35 against 6
    µs per launch for 8 arguments; a 2^22 step makes ~150 launches)."""
    if items <= 0:
        return
    knl, wg = _prepared(rt, file, name, defines, local, fixed, args)
    if wg is None:
        knl(rt.queue, (int(items),), None, *args)
        return
    knl(rt.queue, (-(-int(items) // wg) * wg,), (wg,), *args)


def _prepared(rt: Runtime, file: str, name: str, defines: dict | None, local: int | None,
              fixed: bool, args: tuple) -> tuple[cl.Kernel, int | None]:
    """(kernel, work-group size or None) of a launch, cached in ``rt.launches``.  The
    first launch of a kernel object fixes its scalar argument types from the numpy scalars
    it is given (buffers, None and local memory: no type), as pyopencl's
    ``set_scalar_arg_dtypes`` wants; every call site passes the same kinds per
    position."""
    key = (file, name, tuple(defines.items()) if defines else (), local, fixed)
    hit = rt.launches.get(key)
    if hit is None:
        knl = kernel(rt, file, name, defines)
        if getattr(knl, "_hybridtree_typed", None) is None:
            knl.set_scalar_arg_dtypes([a.dtype if isinstance(a, np.generic) else None
                                       for a in args])
            knl._hybridtree_typed = True
        wg = None if local is None else (
            int(local) if fixed else min(int(local), rt.max_work_group_size(knl)))
        hit = rt.launches[key] = (knl, wg)
    return hit


# -- what a device may ask for -------------------------------------------------------

#: A function of a device description giving the (file, defines) pairs it may build.
OptionSets = Callable[[DeviceInfo], Iterable[tuple[str, dict | None]]]

_OPTION_SETS: dict[str, OptionSets] = {}


def option_sets(fn: OptionSets) -> OptionSets:
    """Declare ``fn`` (a decorator): the define sets a device may ask for, computed by
    the same functions the launch code uses."""
    _OPTION_SETS[f"{fn.__module__}.{fn.__qualname__}"] = fn
    return fn


@dataclass(frozen=True)
class Request:
    """One program build a device may ask for: ``file`` with ``defines`` (sorted name,
    value pairs as text), fast math or not; ``origin``: who declares it."""

    file: str
    defines: tuple[tuple[str, str], ...]
    fast_math: bool
    fp64: bool
    origin: str

    @staticmethod
    def make(file: str, defines: dict | None, origin: str) -> "Request":
        f = _declared(file)
        items = tuple(sorted((str(k), str(v)) for k, v in (defines or {}).items()))
        return Request(file, items, f.fast_math, f.fp64, origin)


def requests(info: DeviceInfo) -> list[Request]:
    """Every build a device of description ``info`` may ask for: the declared option sets
    (of the modules imported so far) and the plain build of the files that have one;
    files needing double precision only where ``info`` has it."""
    out = [Request.make(f.name, None, "kernels.FILES") for f in FILES.values() if f.plain]
    for origin, fn in _OPTION_SETS.items():
        out += [Request.make(file, defines, origin) for file, defines in fn(info)]
    return [r for r in out if info.fp64 or not r.fp64]


class Recorder:
    """Stands in for a :class:`Runtime` where code only asks for kernels (an option set
    that runs the launch code's own choice): records the (file, defines) of every build
    and answers work-group limits from the description."""

    def __init__(self, info: DeviceInfo) -> None:
        self.info = info
        self.builds: list[tuple[str, dict | None]] = []

    @property
    def has_fp64(self) -> bool:
        return self.info.fp64

    def kernel(self, source_name: str, kernel_name: str, defines: dict | None = None,
               fast_math: bool = True):
        self.builds.append((source_name, dict(defines or {})))
        return (source_name, kernel_name, tuple(sorted((defines or {}).items())))

    def max_work_group_size(self, kernel) -> int:
        return self.info.work_group_limit()

    def local_mem_used(self, kernel) -> int:
        return 0           # what a build takes is the compilers' to say (vendor_compile)
