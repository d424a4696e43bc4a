"""OpenCL runtime: device choice, one context and queue per process, program cache.

Kernels are plain OpenCL C 1.2 sources in ``cl/`` (installed as the data package
``hybridtree.cl``); tuning constants reach them as ``-D`` build-time defines.

Device choice, in order of precedence:

1. the ``device`` argument (e.g. from a config file or ``--device``),
2. the environment variable ``HYBRIDTREE_DEVICE``,
3. ``PYOPENCL_CTX`` (pyopencl's own ``"platform:device"`` index syntax),
4. otherwise the first GPU, else the fastest-looking CPU device.

The automatic choice (4., and the words ``gpu``/``cpu``) never takes a simulator or
emulator (Oclgrind calls itself a GPU; :attr:`DeviceInfo.simulator`), nor a device with
less global memory than the run needs when the caller says how much (``need_bytes``,
:func:`memory_needed`); a name or an index still selects such a device.

A choice is either ``"P"``/``"P:D"`` (indices as ``hybridtree devices`` lists them)
or a case-insensitive substring matched against ``"<platform> | <device>"``; the
words ``gpu`` and ``cpu`` select by device type.

Several processes of one node (MPI) spread over the devices a choice matches: with
:func:`set_device_slot` (the node-local rank) a choice that matches n devices (or, with
no choice, the n GPUs) resolves to the (slot mod n)-th of them.

Kernel builds are quiet: a compiler's remarks on a successful build (NVIDIA's compiler
always says something) are logged at debug level on the ``hybridtree.opencl`` logger
instead of pyopencl's ``CompilerWarning``; ``PYOPENCL_COMPILER_OUTPUT=1`` (pyopencl's
own switch) shows them as warnings again.
"""

from __future__ import annotations

import logging
import os
import re
import warnings
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np
import pyopencl as cl

__all__ = [
    "DeviceError",
    "DeviceInfo",
    "Runtime",
    "build_log",
    "build_program",
    "fit_work_group",
    "list_devices",
    "get_runtime",
    "memory_needed",
    "kernel_source",
    "set_device_slot",
]

logger = logging.getLogger(__name__)


class DeviceError(RuntimeError):
    """No usable OpenCL device, or the requested one does not exist."""


#: Device memory per particle of one force evaluation (bytes), measured on the H100
#: (docs/gpus.md, "Memory per particle"): tree, sort scratch, lists, results.
FORCE_BYTES_PER_PARTICLE = 255
#: Device memory per particle of a run's state kept on the device (bytes): float64
#: positions, velocities, accelerations, potentials, masses and 64-bit IDs.
STATE_BYTES_PER_PARTICLE = 96


def memory_needed(n: int, state: bool = True) -> int:
    """Device memory (bytes) that a force evaluation of ``n`` particles needs, with the
    run's state on the device when ``state``; the number the device choice compares with
    a device's global memory."""
    return int(n) * (FORCE_BYTES_PER_PARTICLE + (STATE_BYTES_PER_PARTICLE if state else 0))


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


def fit_work_group(preferred: int, *limits: int, power_of_two: bool = True) -> int:
    """The largest work-group size at most ``preferred`` and every positive ``limit``
    (device limit, kernel limit, local memory over bytes per work-item), rounded down to a
    power of two where the kernel's tree reductions need one; at least 1."""
    size = max(1, min([int(preferred)] + [int(x) for x in limits if x and x > 0]))
    if power_of_two:
        size = 1 << (size.bit_length() - 1)
    return size


def _kind(device_type: int) -> str:
    if device_type & cl.device_type.GPU:
        return "gpu"
    if device_type & cl.device_type.CPU:
        return "cpu"
    if device_type & cl.device_type.ACCELERATOR:
        return "accelerator"
    return "other"


#: Vendor keys: the driver where it decides what the device is (PoCL on a CPU, Oclgrind),
#: else the hardware's maker (its warp or wavefront, its limits).
_DRIVERS = (("oclgrind", "oclgrind"), ("portable computing language", "pocl"), ("pocl", "pocl"))
_MAKERS = (("nvidia", "nvidia"), ("advanced micro devices", "amd"), ("amd", "amd"),
           ("intel", "intel"), ("apple", "apple"))


def _vendor(platform: str, name: str, vendor: str = "") -> str:
    """The vendor key of a device from its platform, device and vendor names."""
    for needle, key in _DRIVERS:
        if needle in platform.lower():
            return key
    text = f"{vendor} {name} {platform}".lower()
    for needle, key in _MAKERS:
        if needle in text:
            return key
    return "other"


def _is_simulator(platform: str, name: str, device_type: int) -> bool:
    """Whether a device only simulates or emulates one: Oclgrind (whose type has every
    bit set: GPU, CPU and accelerator at once), Intel's FPGA emulator, and anything
    calling itself a simulator or an emulator."""
    text = f"{platform} {name}".lower()
    if any(w in text for w in ("oclgrind", "simulat", "emulat")):
        return True
    every = cl.device_type.GPU | cl.device_type.CPU | cl.device_type.ACCELERATOR
    return device_type & every == every


def _describe_device(pi: int, di: int, platform: cl.Platform, d: cl.Device) -> DeviceInfo:
    def get(attr: str, default=0):
        try:
            return getattr(d, attr)
        except (cl.Error, AttributeError):      # a driver that does not answer a query
            return default

    pname, name = platform.name.strip(), d.name.strip()
    return DeviceInfo(pi, di, pname, name, _kind(d.type), int(d.max_compute_units),
                      d.version.strip(), vendor=_vendor(pname, name, str(get("vendor", ""))),
                      max_work_group_size=int(get("max_work_group_size")),
                      local_mem_size=int(get("local_mem_size")),
                      global_mem_size=int(get("global_mem_size")),
                      max_mem_alloc_size=int(get("max_mem_alloc_size")),
                      fp64="cl_khr_fp64" in str(get("extensions", "")).split(),
                      simulator=_is_simulator(pname, name, int(d.type)))


def list_devices() -> list[DeviceInfo]:
    """All OpenCL devices of all platforms (an empty list when there is no ICD)."""
    out: list[DeviceInfo] = []
    try:
        platforms = cl.get_platforms()
    except cl.Error:  # no ICD loader or no platform
        return out
    for pi, p in enumerate(platforms):
        try:
            devices = p.get_devices()
        except cl.Error:
            continue
        for di, d in enumerate(devices):
            out.append(_describe_device(pi, di, p, d))
    return out


def _describe(devices: list[DeviceInfo]) -> str:
    if not devices:
        return "no OpenCL device found (install one, e.g. pip install pocl-binary-distribution)"
    return "available: " + "; ".join(d.label for d in devices)


def _version_key(text: str) -> tuple[int, ...]:
    m = re.search(r"PoCL (\d+)\.(\d+)", text)
    return (int(m.group(1)), int(m.group(2))) if m else (0, 0)


_SLOT = 0       # this process's node-local rank when devices are spread over processes


def set_device_slot(slot: int) -> None:
    """Make ambiguous device choices of this process resolve to their (slot mod n)-th
    match (MPI: the node-local rank, so processes of a node use different GPUs)."""
    global _SLOT
    _SLOT = int(slot)


def _match(spec: str, devices: list[DeviceInfo], need_bytes: int = 0) -> DeviceInfo:
    spec = spec.strip()
    m = re.fullmatch(r"(\d+)(?::(\d+))?", spec)
    if m:
        pi, di = int(m.group(1)), int(m.group(2) or 0)
        for d in devices:
            if d.platform_index == pi and d.device_index == di:
                return d
        raise DeviceError(f"OpenCL device {spec!r} does not exist; {_describe(devices)}")
    low = spec.lower()
    if low in ("gpu", "cpu"):           # a kind, like the automatic choice: no simulators
        hits = [d for d in devices if d.kind == low]
        if not hits:
            raise DeviceError(f"no OpenCL device matches {spec!r}; {_describe(devices)}")
        return _best(hits, need_bytes, what=f"the choice {spec!r}")
    hits = [d for d in devices if low in f"{d.platform} | {d.name}".lower()]
    if not hits:
        raise DeviceError(f"no OpenCL device matches {spec!r}; {_describe(devices)}")
    return _rank(hits)


def usable(d: DeviceInfo, need_bytes: int = 0) -> str:
    """Why the automatic choice passes ``d`` over ("" when it does not): a simulator, or
    less global memory than ``need_bytes`` (a known size only)."""
    if d.simulator:
        return "a simulator"
    if need_bytes and d.global_mem_size and d.global_mem_size < need_bytes:
        return (f"{d.global_mem_size / 2**30:.3g} GiB of memory, the run needs "
                f"{need_bytes / 2**30:.3g} GiB")
    return ""


def _rank(devices: list[DeviceInfo]) -> DeviceInfo:
    """GPU first (the slot's one of several); among CPUs the most compute units, then the
    newest PoCL."""
    gpus = [d for d in devices if d.kind == "gpu"]
    if gpus:
        return gpus[_SLOT % len(gpus)]
    return max(devices, key=lambda d: (d.compute_units, _version_key(d.platform + " " + d.version)))


def _best(devices: list[DeviceInfo], need_bytes: int = 0, what: str = "the automatic choice"
          ) -> DeviceInfo:
    """The automatic choice among ``devices``: :func:`_rank` of those that are no simulator
    and hold ``need_bytes`` (bytes of device memory, 0: not checked)."""
    ok = [d for d in devices if not usable(d, need_bytes)]
    if not ok:
        why = "; ".join(f"{d.label}: {usable(d, need_bytes)}" for d in devices)
        raise DeviceError(f"{what} found no usable OpenCL device ({why}); name one "
                          f"explicitly (--device, HYBRIDTREE_DEVICE) to use it anyway")
    return _rank(ok)


def choose_device(spec: str | None = None, need_bytes: int = 0) -> DeviceInfo:
    """Resolve a device choice (see the module docstring) to one device; ``need_bytes``:
    device memory the run needs (:func:`memory_needed`), 0 when unknown."""
    devices = list_devices()
    if not devices:
        raise DeviceError(_describe(devices))
    if spec is None:
        spec = os.environ.get("HYBRIDTREE_DEVICE") or None
    if spec is None and os.environ.get("PYOPENCL_CTX"):
        spec = os.environ["PYOPENCL_CTX"]
    if spec is not None and spec != "":
        return _match(spec, devices, need_bytes)
    return _best(devices, need_bytes)


def _kernel_dir() -> Path:
    here = Path(__file__).resolve().parent
    for cand in (here / "cl", here.parent / "cl"):
        if (cand / "direct.cl").is_file():
            return cand
    raise FileNotFoundError(f"OpenCL kernel sources not found next to {here}")


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
    ``hybridtree.opencl`` logger at debug level, naming ``what``.  With
    ``PYOPENCL_COMPILER_OUTPUT=1`` the caught warnings are issued again (pyopencl then
    puts the whole log in them).  Other warnings pass through unchanged.

    Raises :class:`DeviceError` when the build fails (the message carries the log).
    """
    caught: list[warnings.WarningMessage] = []
    try:
        with warnings.catch_warnings(record=True) as caught:
            # "always": a filter of "once" or "error" elsewhere must not hide or raise it
            warnings.simplefilter("always", cl.CompilerWarning)
            prg = cl.Program(context, source).build(options=list(options))
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

    @property
    def device(self) -> cl.Device:
        return self.context.devices[0]

    def program(self, source_name: str, defines: dict[str, int | float] | None = None,
                fast_math: bool = True) -> cl.Program:
        """Build ``cl/<source_name>`` with ``-D`` defines, once per context.

        ``fast_math`` adds ``-cl-fast-relaxed-math``; the accuracy tests decide where
        that is allowed (it is for the force kernels: errors stay < 1e-5).  The
        environment variable ``HYBRIDTREE_CL_OPTIONS`` adds compiler options to every
        build (a tuning aid, e.g. ``-cl-denorms-are-zero``).  The build is quiet
        (:func:`build_program`): compiler remarks go to the debug log.
        """
        defines = dict(defines or {})
        extra = tuple(os.environ.get("HYBRIDTREE_CL_OPTIONS", "").split())
        key = (source_name, tuple(sorted(defines.items())), fast_math, extra)
        prg = self._programs.get(key)
        if prg is not None:
            return prg
        opts = [f"-D{k}={v}" for k, v in sorted(defines.items())]
        opts.append("-cl-std=CL1.2")
        if fast_math:
            opts.append("-cl-fast-relaxed-math")
        opts += extra
        prg = build_program(self.context, kernel_source(source_name), opts,
                            f"{source_name} for {self.info.label}")
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
        mf = cl.mem_flags
        array = np.ascontiguousarray(array)
        if array.nbytes == 0:
            array = np.zeros(4, dtype=np.uint8)
        return cl.Buffer(self.context, mf.READ_ONLY | mf.COPY_HOST_PTR, hostbuf=array)

    def empty(self, nbytes: int) -> cl.Buffer:
        return cl.Buffer(self.context, cl.mem_flags.READ_WRITE, size=max(int(nbytes), 4))


_RUNTIMES: dict[tuple[int, int], Runtime] = {}


_CHOSEN: dict[tuple, DeviceInfo] = {}


def get_runtime(device: str | None = None, need_bytes: int = 0) -> Runtime:
    """The process's runtime for the chosen device (created once, then reused; the
    choice itself is remembered per request, memory need, environment and slot, so that
    a call in a hot path enumerates no platforms).  ``need_bytes``: see
    :func:`choose_device`."""
    key = (device, int(need_bytes), os.environ.get("HYBRIDTREE_DEVICE"),
           os.environ.get("PYOPENCL_CTX"), _SLOT)
    info = _CHOSEN.get(key)
    if info is None:
        info = _CHOSEN[key] = choose_device(device, need_bytes)
    key = (info.platform_index, info.device_index)
    rt = _RUNTIMES.get(key)
    if rt is None:
        dev = cl.get_platforms()[info.platform_index].get_devices()[info.device_index]
        ctx = cl.Context([dev])
        # profiling on: the run's phase timers read device timestamps of markers
        # (hybridtree.clock) instead of waiting for the queue at every phase boundary
        queue = cl.CommandQueue(ctx, properties=cl.command_queue_properties.PROFILING_ENABLE)
        rt = Runtime(info, ctx, queue)
        _RUNTIMES[key] = rt
    return rt


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
