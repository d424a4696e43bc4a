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
"""

from __future__ import annotations

import os
import re
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np
import pyopencl as cl

__all__ = [
    "DeviceError",
    "DeviceInfo",
    "Runtime",
    "list_devices",
    "get_runtime",
    "kernel_source",
    "set_device_slot",
]


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
        build (a tuning aid, e.g. ``-cl-denorms-are-zero``).
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
        try:
            prg = cl.Program(self.context, kernel_source(source_name)).build(options=opts)
        except cl.RuntimeError as exc:  # build failure: the message carries the log
            raise DeviceError(f"building {source_name} for {self.info.label} failed "
                              f"with options {' '.join(opts)}:\n{exc}") from exc
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
