"""The OpenCL layer under the device choice: one device's description, its context and
queue with a program cache (:class:`Runtime`), kernel sources and quiet builds.

Kernels are plain OpenCL C 1.2 sources in ``cl/`` (installed as the data package
``hybridtree.cl``); tuning constants reach them as ``-D`` build-time defines.

Kernel builds are quiet: a compiler's remarks on a successful build (NVIDIA's compiler
always says something) are logged at debug level on the ``hybridtree.device.runtime`` logger
instead of pyopencl's ``CompilerWarning`` (the logger keeps the name it had when this
code lived in :mod:`hybridtree.device.choice`); ``PYOPENCL_COMPILER_OUTPUT=1`` (pyopencl's own
switch) shows them as warnings again.

:mod:`hybridtree.device.choice` chooses the device and hands out runtimes; this module knows
nothing of the choice.
"""

from __future__ import annotations

import logging
import os
import re
import warnings
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path
from types import MappingProxyType
from typing import Any

import numpy as np
import pyopencl as cl

from ..errors import HybridtreeError
from .memory import Ledger, new_buffer
from .quiet import quiet_build

__all__ = [
    "DeviceError",
    "DeviceInfo",
    "EnvironmentSettingError",
    "Runtime",
    "build_log",
    "build_program",
    "cache_problem",
    "check_environment",
    "fit_work_group",
    "kernel_source",
    "pack4",
    "split_hi_lo",
    "user_cache_dir",
]

logger = logging.getLogger("hybridtree.device.choice")


class DeviceError(HybridtreeError, RuntimeError):
    """No usable OpenCL device, or the requested one does not exist."""


class EnvironmentSettingError(DeviceError):
    """An environment variable of the OpenCL layer that cannot be used: an
    ``XDG_CACHE_HOME`` that is no folder to write in, a ``PYOPENCL_COMPILER_OUTPUT``
    pyopencl cannot read, ``HYBRIDTREE_CL_OPTIONS`` the compiler refuses.  The user's to
    change, and no fault of the device: the device probe (:mod:`hybridtree.device.probe`)
    lets it through instead of passing over the device (and caching that)."""


#: what pyopencl reads as a truth value (pytools.strtobool; any case, nothing stripped)
_TRUTH_VALUES = ("y", "yes", "t", "true", "on", "1", "n", "no", "f", "false", "off", "0")
#: the status codes of a build whose options the compiler refuses
_REFUSED_OPTIONS = MappingProxyType({-43: "INVALID_BUILD_OPTIONS",
                                     -66: "INVALID_COMPILER_OPTIONS",
                                     -67: "INVALID_LINKER_OPTIONS"})


@dataclass(frozen=True)
class DeviceInfo:
    """One OpenCL device as the choice and the tuning see it.  Limits of 0 mean unknown
    (a description made by hand); the tuning then assumes nothing beyond OpenCL 1.2's
    minima."""

    platform_index: int
    device_index: int
    platform: str
    name: str
    kind: str  # "gpu", "cpu", "accelerator" or "other"
    compute_units: int
    version: str
    vendor: str = "other"           # "nvidia", "amd", "intel", "apple", "pocl", "oclgrind", "other"
    max_work_group_size: int = 0    # CL_DEVICE_MAX_WORK_GROUP_SIZE
    local_mem_size: int = 0         # bytes, CL_DEVICE_LOCAL_MEM_SIZE
    global_mem_size: int = 0        # bytes
    max_mem_alloc_size: int = 0     # bytes, largest single buffer
    fp64: bool = False              # cl_khr_fp64
    simulator: bool = False         # a simulator or emulator: never chosen automatically
    driver: str = ""                # CL_DRIVER_VERSION (PoCL: its own version, "3.0-rc2")
    #: how the force kernels compute 1/sqrt (cl/rsqrt.cl's RSQRT_MODE), set by the device
    #: probe (hybridtree.device.probe) when the device is chosen; not part of what the device is
    rsqrt_mode: int = field(default=0, compare=False)
    #: how the float64 reductions keep their written order (cl/reduce.cl): 0 plain loops
    #: do, 1 they need ORDERED_SUMS, -1 neither does (device sums are then not the host's
    #: bits); set by the device probe
    sum_mode: int = field(default=0, compare=False)

    @property
    def label(self) -> str:
        return f"{self.platform_index}:{self.device_index} {self.platform} | {self.name} ({self.kind}, {self.compute_units} CU)"

    def work_group_limit(self) -> int:
        """The largest work-group size the device allows; 64 where it is unknown (a
        description made by hand), which every GPU and CPU device of the last decade
        allows (OpenCL 1.2's own minimum, 1, would be needlessly strict)."""
        return self.max_work_group_size or 64

    def local_mem_limit(self) -> int:
        """Local memory per work-group in bytes (OpenCL 1.2's minimum, 32 KiB, when unknown)."""
        return self.local_mem_size or 32768

    def math_defines(self) -> dict[str, int]:
        """The defines the force kernels need for this device's math (cl/rsqrt.cl):
        RSQRT_MODE where the probe chose other than plain rsqrt, else none (the same
        programs as before the probe existed)."""
        return {"RSQRT_MODE": self.rsqrt_mode} if self.rsqrt_mode else {}


def user_cache_dir() -> Path:
    """hybridtree's folder for what it may rebuild at any time (device probes, the ICD
    folder of pip's OpenCL drivers): ``$HYBRIDTREE_CACHE_DIR``, else
    ``$XDG_CACHE_HOME/hybridtree``, else ``~/.cache/hybridtree``."""
    root = os.environ.get("HYBRIDTREE_CACHE_DIR")
    if root:
        return Path(root)
    xdg = os.environ.get("XDG_CACHE_HOME") or os.path.join(os.path.expanduser("~"), ".cache")
    return Path(xdg) / "hybridtree"


def cache_problem() -> str:
    """Why the cache folder is unusable, "" when it is not: the folder under which the
    OpenCL drivers (PoCL: ``$XDG_CACHE_HOME/pocl``) and pyopencl (pytools' caches, made
    when the first kernel is) keep theirs, ``$XDG_CACHE_HOME`` or else ``~/.cache``, must
    be, or be creatable in, a folder this process may write."""
    xdg = os.environ.get("XDG_CACHE_HOME")
    if xdg:
        problem = _folder_problem(Path(xdg))
        return f"XDG_CACHE_HOME = {xdg!r} is no usable cache folder ({problem})" if problem else ""
    home = Path(os.path.expanduser("~")) / ".cache"
    problem = _folder_problem(home)
    return f"the cache folder {home} is unusable ({problem})" if problem else ""


def _folder_problem(path: Path) -> str:
    """Why ``path`` cannot be used as a folder to write in, "" when it can (it exists as a
    writable folder, or its nearest existing ancestor is one)."""
    p = path
    while not os.path.lexists(p) and p != p.parent:
        p = p.parent
    if not p.is_dir():
        return f"{p} is not a folder" if os.path.exists(p) else f"{p} cannot be reached"
    if not os.access(p, os.W_OK | os.X_OK):
        return f"{p} may not be written"
    return ""


def fit_work_group(preferred: int, *limits: int, power_of_two: bool = True) -> int:
    """The largest work-group size at most ``preferred`` and every positive ``limit``
    (device limit, kernel limit, local memory over bytes per work-item), rounded down to a
    power of two where the kernel's tree reductions need one; at least 1."""
    size = max(1, min([int(preferred)] + [int(x) for x in limits if x and x > 0]))
    if power_of_two:
        size = 1 << (size.bit_length() - 1)
    return size


def _kernel_dir() -> Path:
    package = Path(__file__).resolve().parent.parent
    for cand in (package / "cl", package.parent / "cl"):   # installed; a source tree
        if (cand / "direct.cl").is_file():
            return cand
    raise FileNotFoundError(f"OpenCL kernel sources not found next to {package}")


_INCLUDE = re.compile(r'^#include "([\w.]+\.cl)"\s*$', re.MULTILINE)


def kernel_source(name: str) -> str:
    """Text of ``cl/<name>`` (works from a source checkout and from an installed wheel),
    with ``#include "other.cl"`` lines replaced by that file's text (done here, not by
    the OpenCL compiler, because include paths differ between drivers)."""
    text = (_kernel_dir() / name).read_text()
    return _INCLUDE.sub(lambda m: kernel_source(m.group(1)), text)


def _compiler_output_wanted() -> bool:
    """Whether ``PYOPENCL_COMPILER_OUTPUT`` asks for compiler output (read as pyopencl
    reads it: y/yes/t/true/on/1, any case)."""
    value = os.environ.get("PYOPENCL_COMPILER_OUTPUT", "").strip().lower()
    return value in ("y", "yes", "t", "true", "on", "1")


def check_environment() -> None:
    """:class:`EnvironmentSettingError` where the cache folder is unusable
    (:func:`cache_problem`: PoCL then shows no device, pyopencl fails at its first kernel)
    or pyopencl could not read ``PYOPENCL_COMPILER_OUTPUT`` (it reads it only after a build
    that was not cached, and then fails with a KeyError of its own): checked before the
    devices are listed and before every build, not only where pyopencl would fail."""
    problem = cache_problem()
    if problem:
        raise EnvironmentSettingError(
            f"{problem}: the OpenCL drivers and pyopencl keep their caches there, and "
            f"without them no device is seen or no kernel built; set XDG_CACHE_HOME to a "
            f"folder that may be written")
    switch = os.environ.get("PYOPENCL_COMPILER_OUTPUT")
    if switch is not None and switch.lower() not in _TRUTH_VALUES:
        raise EnvironmentSettingError(
            f"PYOPENCL_COMPILER_OUTPUT = {switch!r} is not a truth value pyopencl reads "
            f"({', '.join(_TRUTH_VALUES[:6])} or {', '.join(_TRUTH_VALUES[6:])}): set "
            f"PYOPENCL_COMPILER_OUTPUT=1 to see the compiler's remarks, or unset it")


def build_log(program: cl.Program) -> str:
    """The compiler's build log of ``program``: for each of its devices with a non-empty
    log, a line with the device's name and a colon, then the log; "" when there is none."""
    blocks = []
    for dev in program.get_info(cl.program_info.DEVICES):
        try:
            text = program.get_build_info(dev, cl.program_build_info.LOG)
        except cl.Error:        # a program from pyopencl's binary cache may have none
            continue
        if text and text.strip():
            blocks.append(f"{dev.name.strip()}:\n{text.strip()}")
    return "\n".join(blocks)


def build_program(context: cl.Context, source: str, options: Sequence[str],
                  what: str = "program") -> cl.Program:
    """Build OpenCL C ``source`` for ``context``'s devices with compiler ``options``.

    pyopencl warns (``CompilerWarning``) whenever a successful build leaves a non-empty
    log, and NVIDIA's compiler always leaves one, so each build would print a warning
    nobody can act on.  Here that warning is caught; the log (:func:`build_log`, or
    the warning's text for a build pyopencl took from its binary cache) goes to the
    ``hybridtree.device.choice`` logger at debug level, naming ``what``.  With
    ``PYOPENCL_COMPILER_OUTPUT=1`` the caught warnings are issued again (pyopencl then
    puts the whole log in them).  Other warnings pass through unchanged.

    Raises :class:`DeviceError` when the build fails (the message carries the log), and
    :class:`EnvironmentSettingError` before it (:func:`check_environment`).
    """
    check_environment()
    caught: list[warnings.WarningMessage] = []
    try:
        with warnings.catch_warnings(record=True) as caught:
            # "always": a filter of "once" or "error" elsewhere must not hide or raise it
            warnings.simplefilter("always", cl.CompilerWarning)
            prg = quiet_build(context, source, options)
    except cl.RuntimeError as exc:  # build failure: the message carries the log
        raise DeviceError(f"building {what} failed with options {' '.join(options)}:\n"
                          f"{exc}") from exc
    finally:
        remarks = [w for w in caught if issubclass(w.category, cl.CompilerWarning)]
        for w in caught:
            if w not in remarks or _compiler_output_wanted():
                warnings.warn_explicit(w.message, w.category, w.filename, w.lineno,
                                       source=w.source)
    if remarks:
        text = build_log(prg) or "\n".join(str(w.message) for w in remarks)
        logger.debug("building %s with options %s: the compiler said:\n%s",
                     what, " ".join(options), text)
    return prg


@dataclass
class Runtime:
    """One OpenCL context and in-order queue on one device, with a program cache."""

    info: DeviceInfo
    context: cl.Context
    queue: cl.CommandQueue
    _programs: dict = field(default_factory=dict)
    #: launch lookups (hybridtree.device.kernels.launch: call signature -> (kernel, wg);
    #: the sort's kernels per tuning, gravity.tree.device_sort)
    launches: dict = field(default_factory=dict)
    #: HYBRIDTREE_CL_OPTIONS as it was when the runtime was made: added to every build of
    #: this runtime (read once, not at every launch: 1.8 us a lookup on the 2-core machine)
    cl_options: tuple[str, ...] = field(
        default_factory=lambda: tuple(os.environ.get("HYBRIDTREE_CL_OPTIONS", "").split()))
    #: every buffer made here, by owner, with the peak (hybridtree.device.memory)
    memory: Ledger = field(default_factory=Ledger)
    #: this runtime's copies (hybridtree.device.transfer.Copies: their options, the
    #: pinned staging area, the kept scratch buffers), made at the first copy unless given
    copies: Any = None
    #: made at their first use: this runtime's reductions (device.reduce.Reducer) and the
    #: list walk's room and counts (gravity.list_walk.ListRoom)
    reductions: Any = None
    lists: Any = None

    @property
    def device(self) -> cl.Device:
        return self.context.devices[0]

    def program(self, source_name: str, defines: dict[str, int | float] | None = None,
                fast_math: bool = True) -> cl.Program:
        """Build ``cl/<source_name>`` with ``-D`` defines, once per context.

        ``fast_math`` adds ``-cl-fast-relaxed-math``; the accuracy tests decide where
        that is allowed (it is for the force kernels: errors stay < 1e-5).  The
        environment variable ``HYBRIDTREE_CL_OPTIONS`` adds compiler options to every
        build (a tuning aid, e.g. ``-cl-denorms-are-zero``; its value when the runtime
        was made, :attr:`cl_options`).  The build is quiet
        (:func:`build_program`): compiler remarks go to the debug log.
        """
        defines = dict(defines or {})
        extra = self.cl_options
        key = (source_name, tuple(sorted(defines.items())), fast_math, extra)
        prg = self._programs.get(key)
        if prg is not None:
            return prg
        opts = [f"-D{k}={v}" for k, v in sorted(defines.items())]
        opts.append("-cl-std=CL1.2")
        if fast_math:
            opts.append("-cl-fast-relaxed-math")
        opts += extra
        try:
            prg = build_program(self.context, kernel_source(source_name), opts,
                                f"{source_name} for {self.info.label}")
        except DeviceError as exc:
            if extra and getattr(exc.__cause__, "code", None) in _REFUSED_OPTIONS:
                raise EnvironmentSettingError(
                    f"the OpenCL compiler of {self.info.label} refuses the build options "
                    f"with those of HYBRIDTREE_CL_OPTIONS = {' '.join(extra)!r} added "
                    f"({_REFUSED_OPTIONS[exc.__cause__.code]}): correct "
                    f"HYBRIDTREE_CL_OPTIONS, or unset it") from exc
            raise
        self._programs[key] = prg
        return prg

    def kernel(self, source_name: str, kernel_name: str,
               defines: dict[str, int | float] | None = None, fast_math: bool = True) -> cl.Kernel:
        """A kernel object of a cached program (one per program and name)."""
        prg = self.program(source_name, defines, fast_math)
        key = ("kernel", id(prg), kernel_name)
        knl = self._programs.get(key)
        if knl is None:
            knl = self._programs[key] = cl.Kernel(prg, kernel_name)
        return knl

    def builds(self) -> list[tuple[str, dict, bool]]:
        """(file, defines, fast_math) of every program built on this runtime so far (what
        the code asked for: tests compare it with hybridtree.device.kernels.requests)."""
        return [(k[0], dict(k[1]), k[2]) for k in self._programs if len(k) == 4]

    @property
    def has_fp64(self) -> bool:
        """Whether kernels may use double precision (cl_khr_fp64)."""
        return "cl_khr_fp64" in self.device.extensions.split()

    def max_work_group_size(self, kernel: cl.Kernel) -> int:
        """The largest work-group ``kernel`` may be launched with on this device (at most
        the device's limit; less where the kernel's registers or local memory need it)."""
        return int(kernel.get_work_group_info(cl.kernel_work_group_info.WORK_GROUP_SIZE, self.device))

    def local_mem_used(self, kernel: cl.Kernel) -> int:
        """Bytes of local memory one work-group of ``kernel`` takes on this device."""
        return int(kernel.get_work_group_info(cl.kernel_work_group_info.LOCAL_MEM_SIZE,
                                              self.device))

    def to_device(self, array: np.ndarray) -> cl.Buffer:
        array = np.ascontiguousarray(array)
        if array.nbytes == 0:
            array = np.zeros(4, dtype=np.uint8)
        return self.buffer(cl.mem_flags.READ_ONLY | cl.mem_flags.COPY_HOST_PTR, array.nbytes, array)

    def empty(self, nbytes: int) -> cl.Buffer:
        return self.buffer(cl.mem_flags.READ_WRITE, max(int(nbytes), 4))

    def buffer(self, flags: int, nbytes: int, hostbuf: np.ndarray | None = None,
               owner: str | None = None) -> cl.Buffer:
        """A buffer entered in :attr:`memory` (:func:`hybridtree.device.memory.new_buffer`;
        not on a simulator)."""
        return new_buffer(self.context, flags, nbytes, hostbuf,
                          None if self.info.simulator else self.memory, owner)


def split_hi_lo(x: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """float64 -> (hi, lo) float32 with hi + lo == x to about 2^-48 relative.

    Differences of close points formed as (hi_a - hi_b) + (lo_a - lo_b) on the
    device are then accurate even far from the coordinate origin.
    """
    hi = x.astype(np.float32)
    lo = (x - hi.astype(np.float64)).astype(np.float32)
    return hi, lo


def pack4(xyz: np.ndarray, w: np.ndarray | float = 0.0, dtype=np.float32) -> np.ndarray:
    """(N, 3) and (N,) -> contiguous (N, 4) array for float4 / int4 buffers."""
    out = np.empty((len(xyz), 4), dtype=dtype)
    out[:, :3] = xyz
    out[:, 3] = w
    return out
