"""OpenCL runtime: device choice, one context and queue per process, program cache.

Kernels are plain OpenCL C 1.2 sources in ``cl/`` (installed as the data package
``hybridtree.cl``); tuning constants reach them as ``-D`` build-time defines.

Device choice, in order of precedence:

1. the ``device`` argument (e.g. from a config file or ``--device``),
2. the environment variable ``HYBRIDTREE_DEVICE``,
3. ``PYOPENCL_CTX`` (pyopencl's own ``"platform:device"`` index syntax),
4. otherwise the first GPU, else the fastest-looking CPU device.

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
    "list_devices",
    "get_runtime",
    "kernel_source",
    "set_device_slot",
]

logger = logging.getLogger(__name__)


class DeviceError(RuntimeError):
    """No usable OpenCL device, or the requested one does not exist."""


@dataclass(frozen=True)
class DeviceInfo:
    platform_index: int
    device_index: int
    platform: str
    name: str
    kind: str  # "gpu", "cpu", "accelerator" or "other"
    compute_units: int
    version: str

    @property
    def label(self) -> str:
        return f"{self.platform_index}:{self.device_index} {self.platform} | {self.name} ({self.kind}, {self.compute_units} CU)"


def _kind(device_type: int) -> str:
    if device_type & cl.device_type.GPU:
        return "gpu"
    if device_type & cl.device_type.CPU:
        return "cpu"
    if device_type & cl.device_type.ACCELERATOR:
        return "accelerator"
    return "other"


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
            out.append(
                DeviceInfo(pi, di, p.name.strip(), d.name.strip(), _kind(d.type),
                           int(d.max_compute_units), d.version.strip())
            )
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


def _match(spec: str, devices: list[DeviceInfo]) -> DeviceInfo:
    spec = spec.strip()
    m = re.fullmatch(r"(\d+)(?::(\d+))?", spec)
    if m:
        pi, di = int(m.group(1)), int(m.group(2) or 0)
        for d in devices:
            if d.platform_index == pi and d.device_index == di:
                return d
        raise DeviceError(f"OpenCL device {spec!r} does not exist; {_describe(devices)}")
    low = spec.lower()
    if low in ("gpu", "cpu"):
        hits = [d for d in devices if d.kind == low]
    else:
        hits = [d for d in devices if low in f"{d.platform} | {d.name}".lower()]
    if not hits:
        raise DeviceError(f"no OpenCL device matches {spec!r}; {_describe(devices)}")
    return _best(hits)


def _best(devices: list[DeviceInfo]) -> DeviceInfo:
    """GPU first (the slot's one of several); among CPUs the most compute units, then the
    newest PoCL."""
    gpus = [d for d in devices if d.kind == "gpu"]
    if gpus:
        return gpus[_SLOT % len(gpus)]
    return max(devices, key=lambda d: (d.compute_units, _version_key(d.platform + " " + d.version)))


def choose_device(spec: str | None = None) -> DeviceInfo:
    """Resolve a device choice (see the module docstring) to one device."""
    devices = list_devices()
    if not devices:
        raise DeviceError(_describe(devices))
    if spec is None:
        spec = os.environ.get("HYBRIDTREE_DEVICE") or None
    if spec is None and os.environ.get("PYOPENCL_CTX"):
        spec = os.environ["PYOPENCL_CTX"]
    if spec is not None and spec != "":
        return _match(spec, devices)
    return _best(devices)


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
        return int(kernel.get_work_group_info(cl.kernel_work_group_info.WORK_GROUP_SIZE, self.device))

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


def get_runtime(device: str | None = None) -> Runtime:
    """The process's runtime for the chosen device (created once, then reused; the
    choice itself is remembered per request, environment and slot, so that a call in a
    hot path enumerates no platforms)."""
    key = (device, os.environ.get("HYBRIDTREE_DEVICE"), os.environ.get("PYOPENCL_CTX"), _SLOT)
    info = _CHOSEN.get(key)
    if info is None:
        info = _CHOSEN[key] = choose_device(device)
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
