"""OpenCL devices: which drivers are seen, which device is chosen, one runtime per process.

Device choice, in order of precedence:

1. the ``device`` argument (e.g. from a config file or ``--device``),
2. the environment variable ``HYBRIDTREE_DEVICE``,
3. ``PYOPENCL_CTX`` (pyopencl's own ``"platform:device"`` index syntax),
4. otherwise the first GPU, else the CPU device ranked first (:func:`_rank`).

A device is taken only after it passed the device probe (:mod:`hybridtree.device.probe`): it
builds a small kernel with the force kernels' options (a driver can list a device whose
compiler then fails every build: PyPI's PoCL 3.0 on CPUs newer than its LLVM), and the
probe measures how the device must compute 1/sqrt (:attr:`DeviceInfo.rsqrt_mode`).  The
automatic choice passes over a device that fails, saying why in the log; a device the
user names that fails is one :class:`DeviceError` line.  Probes are cached per device
and driver, so this costs one small build per device the first time only.

The automatic choice (4., and the words ``gpu``/``cpu``) never takes a simulator or
emulator (Oclgrind calls itself a GPU; :attr:`DeviceInfo.simulator`), nor a device with
less global memory than the run needs when the caller says how much (``need_bytes``,
:func:`memory_needed`); a name or an index still selects such a device.

A choice is ``"P"``/``"P:D"`` (indices as ``hybridtree devices`` lists them), a kind
(``gpu``, ``cpu``), a driver's name (``pocl``, ``intel``, ``nvidia``, ``amd``, ``apple``,
``oclgrind``: the devices of that vendor's OpenCL, :data:`VENDOR_WORDS`), or else a
case-insensitive substring of ``"<platform> | <device>"``.

Several processes of one node (MPI) spread over the devices a choice matches: with
:func:`set_device_slot` (the node-local rank) a choice that matches n devices (or, with
no choice, the n GPUs) resolves to the (slot mod n)-th of them.

OpenCL drivers that pip installs without registering them with the ICD loader (Intel's
CPU runtime, ``intel-opencl-rt``, part of the ``cpu`` extra) are registered when this
module is imported (:func:`register_pip_drivers`, in :mod:`hybridtree.device.drivers` with
the devices' descriptions).
"""

from __future__ import annotations

import logging
import os
import re
from collections.abc import Callable
from dataclasses import dataclass, field, replace

import pyopencl as cl

from .drivers import VENDOR_WORDS, list_devices, register_pip_drivers
from .probe import Probe, probe
from .runtime import DeviceError, DeviceInfo, Runtime

__all__ = ["PROCESS_DEVICES", "ProcessDevices", "choose_device", "get_runtime", "list_devices",
           "memory_needed", "probe_device", "register_pip_drivers", "set_device_slot",
           "unusable_devices"]

logger = logging.getLogger(__name__)

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


#: What a user can do when no device works: the README's install brings two CPU drivers.
REMEDY = ("hybridtree's cpu extra (pip install -e '.[cpu]') brings two CPU drivers, PoCL and "
          "Intel's CPU runtime; a system one also serves (Debian: apt-get install "
          "pocl-opencl-icd); hybridtree devices lists what is seen")


def _describe(devices: list[DeviceInfo]) -> str:
    if not devices:
        return f"no OpenCL device found ({REMEDY})"
    return "available: " + "; ".join(d.label for d in devices)


@dataclass
class ProcessDevices:
    """What a process knows of its OpenCL devices: the probes' results (per device,
    driver and HYBRIDTREE_CL_OPTIONS), the choices made (per request, memory need,
    environment and slot), one runtime per device, and the slot (the node-local rank)
    that ambiguous choices resolve by.  One per process (:data:`PROCESS_DEVICES`): an
    OpenCL context is the process's, and every part of a run shares it."""

    probes: dict[tuple, tuple[str, Probe]] = field(default_factory=dict)
    chosen: dict[tuple, DeviceInfo] = field(default_factory=dict)
    runtimes: dict[tuple[int, int], Runtime] = field(default_factory=dict)
    slot: int = 0

    def probe(self, d: DeviceInfo) -> Probe:
        """The device probe's result for ``d`` (:mod:`hybridtree.device.probe`), made once."""
        key = (d.platform_index, d.device_index, d.platform, d.name,
               os.environ.get("HYBRIDTREE_CL_OPTIONS", ""))
        hit = self.probes.get(key)
        if hit is None:
            dev = cl.get_platforms()[d.platform_index].get_devices()[d.device_index]
            hit = self.probes[key] = (d.label, probe(d, dev))
        return hit[1]

    def runtime(self, device: str | None = None, need_bytes: "Need" = 0) -> Runtime:
        """The runtime for the chosen device (:func:`get_runtime`; a need per device is
        weighed afresh each call: a run's, once)."""
        key = (device, need_bytes if callable(need_bytes) else int(need_bytes),
               os.environ.get("HYBRIDTREE_DEVICE"), os.environ.get("PYOPENCL_CTX"), self.slot)
        info = None if callable(need_bytes) else self.chosen.get(key)
        if info is None:
            info = choose_device(device, need_bytes, slot=self.slot)
            if not callable(need_bytes):
                self.chosen[key] = info
        key = (info.platform_index, info.device_index)
        rt = self.runtimes.get(key)
        if rt is None:
            dev = cl.get_platforms()[info.platform_index].get_devices()[info.device_index]
            ctx = cl.Context([dev])
            # profiling on: the run's phase timers read device timestamps of markers
            # (hybridtree.device.clock) instead of waiting for the queue at every phase
            # boundary
            queue = cl.CommandQueue(ctx,
                                    properties=cl.command_queue_properties.PROFILING_ENABLE)
            rt = self.runtimes[key] = Runtime(info, ctx, queue)
        return rt


#: this process's devices (the one mutable global of device/, documented in
#: tests/test_layout.py: OpenCL contexts and the ICD loader are per process)
PROCESS_DEVICES = ProcessDevices()


def probe_device(d: DeviceInfo) -> Probe:
    """The device probe's result for ``d`` (:mod:`hybridtree.device.probe`; remembered for the
    process)."""
    return PROCESS_DEVICES.probe(d)


def unusable_devices() -> list[str]:
    """"label: reason" of every device this process probed and found unable to build
    kernels (for a run's log)."""
    return [f"{label}: {p.reason}" for label, p in PROCESS_DEVICES.probes.values() if not p.ok]


#: A check of one device: the probe, or (tests, descriptions made by hand) a stand-in.
Check = Callable[[DeviceInfo], Probe]


def _probed(d: DeviceInfo, check: Check | None) -> tuple[DeviceInfo | None, str]:
    """``d`` with its probe's math, or None and why it cannot be used (``check`` None:
    the device is taken as it is described)."""
    if check is None:
        return d, ""
    result = check(d)
    if not result.ok:
        return None, result.reason
    return replace(d, rsqrt_mode=result.rsqrt_mode, sum_mode=result.sum_mode), ""


def _pocl_version(d: DeviceInfo) -> tuple[int, int]:
    """A PoCL device's PoCL version (its driver version, e.g. "3.1+debian"); (0, 0) for
    other drivers or when it cannot be read."""
    m = re.match(r"(\d+)\.(\d+)", d.driver) if d.vendor == "pocl" else None
    return (int(m.group(1)), int(m.group(2))) if m else (0, 0)


def set_device_slot(slot: int) -> None:
    """Make ambiguous device choices of this process resolve to their (slot mod n)-th
    match (MPI: the node-local rank, so processes of a node use different GPUs)."""
    PROCESS_DEVICES.slot = int(slot)


#: Device memory a run needs (bytes; 0: unknown), or what it needs on a given device (a
#: run's memory plan depends on the device: hybridtree.run.plan.device_plan)
Need = int | Callable[[DeviceInfo], int]


def usable(d: DeviceInfo, need_bytes: Need = 0) -> str:
    """Why the automatic choice passes ``d`` over before probing it ("" when it does
    not): a simulator, or less global memory than ``need_bytes`` (a known size only;
    a callable: what the run needs on ``d``)."""
    if d.simulator:
        return "a simulator"
    need = need_bytes(d) if callable(need_bytes) else need_bytes
    if need and d.global_mem_size and d.global_mem_size < need:
        return (f"{d.global_mem_size / 2**30:.3g} GiB of memory, the run needs "
                f"{need / 2**30:.3g} GiB")
    return ""


def _cpu_driver_rank(d: DeviceInfo) -> int:
    """Rank of a CPU device's driver (higher first), as measured with the README's example
    on the 2-core development machine (docs/devices.md): PoCL 3.1 and newer 9.3 s,
    Intel's CPU runtime 10.7 s, PyPI's PoCL 3.0 12.5 s."""
    if d.vendor == "pocl":
        return 2 if _pocl_version(d) >= (3, 1) else 0
    return 1 if d.vendor == "intel" else -1


def _rank(devices: list[DeviceInfo], slot: int = 0) -> DeviceInfo:
    """GPU first (the ``slot``'s one of several); among CPUs the most compute units, then
    the driver (:func:`_cpu_driver_rank`), then the newest PoCL."""
    gpus = [d for d in devices if d.kind == "gpu"]
    if gpus:
        return gpus[slot % len(gpus)]
    return max(devices, key=lambda d: (d.compute_units, _cpu_driver_rank(d), _pocl_version(d)))


def _working(devices: list[DeviceInfo], check: Check | None
             ) -> tuple[list[DeviceInfo], list[str]]:
    """The devices that pass ``check`` (with their math), and "label: reason" of those
    that do not."""
    good, bad = [], []
    for d in devices:
        ok, why = _probed(d, check)
        if ok is not None:
            good.append(ok)
        else:
            bad.append(f"{d.label}: {why}")
            logger.info("passing over OpenCL device %s: it cannot build kernels: %s",
                        d.label, why)
    return good, bad


def _best(devices: list[DeviceInfo], need_bytes: Need = 0, what: str = "the automatic choice",
          check: Check | None = None, slot: int = 0) -> DeviceInfo:
    """The automatic choice among ``devices``: :func:`_rank` (by ``slot``) of those that
    are no simulator, hold ``need_bytes`` (bytes of device memory, 0: not checked) and
    pass ``check`` (the device probe; None: not probed)."""
    ok = [d for d in devices if not usable(d, need_bytes)]
    if not ok:
        why = "; ".join(f"{d.label}: {usable(d, need_bytes)}" for d in devices)
        raise DeviceError(f"{what} found no usable OpenCL device ({why}); name one "
                          f"explicitly (--device, HYBRIDTREE_DEVICE) to use it anyway")
    good, bad = _working(ok, check)
    if not good:
        raise DeviceError(f"{what} found no OpenCL device that builds kernels "
                          f"({'; '.join(bad)}); {REMEDY}")
    return _rank(good, slot)


def _match(spec: str, devices: list[DeviceInfo], need_bytes: Need = 0,
           check: Check | None = None, slot: int = 0) -> DeviceInfo:
    """The device a choice ``spec`` names (see the module docstring), probed with
    ``check``: a named device that fails it is an error, not passed over; ``slot``: which
    of several matches."""
    spec = spec.strip()
    m = re.fullmatch(r"(\d+)(?::(\d+))?", spec)
    low = spec.lower()
    if m:
        pi, di = int(m.group(1)), int(m.group(2) or 0)
        hits = [d for d in devices if d.platform_index == pi and d.device_index == di]
        if not hits:
            raise DeviceError(f"OpenCL device {spec!r} does not exist; {_describe(devices)}")
    elif low in ("gpu", "cpu"):         # a kind, like the automatic choice: no simulators
        hits = [d for d in devices if d.kind == low]
        if not hits:
            raise DeviceError(f"no OpenCL device matches {spec!r}; {_describe(devices)}")
        return _best(hits, need_bytes, what=f"the choice {spec!r}", check=check, slot=slot)
    elif low in VENDOR_WORDS:
        hits = [d for d in devices if d.vendor == low]
        if not hits:
            raise DeviceError(f"no device of {spec!r}'s OpenCL driver is installed; "
                              f"{_describe(devices)}")
    else:
        hits = [d for d in devices if low in f"{d.platform} | {d.name}".lower()]
        if not hits:
            raise DeviceError(f"no OpenCL device matches {spec!r}; {_describe(devices)}")
    good, bad = _working(hits, check)
    if not good:
        raise DeviceError(f"the OpenCL device {spec!r} cannot build kernels: "
                          f"{'; '.join(bad)} (choose another: hybridtree devices)")
    return _rank(good, slot)


def choose_device(spec: str | None = None, need_bytes: Need = 0,
                  slot: int | None = None) -> DeviceInfo:
    """Resolve a device choice (see the module docstring) to one device that passed the
    device probe, with the probe's math (:attr:`DeviceInfo.rsqrt_mode`); ``need_bytes``:
    device memory the run needs (:func:`memory_needed`), 0 when unknown, or a callable
    giving it per device (a run's plan); ``slot``: which
    of several matches (default: the process's, :func:`set_device_slot`)."""
    slot = PROCESS_DEVICES.slot if slot is None else int(slot)
    devices = list_devices()
    if not devices:
        raise DeviceError(_describe(devices))
    if spec is None:
        spec = os.environ.get("HYBRIDTREE_DEVICE") or None
    if spec is None and os.environ.get("PYOPENCL_CTX"):
        spec = os.environ["PYOPENCL_CTX"]
    if spec is not None and spec != "":
        return _match(spec, devices, need_bytes, check=probe_device, slot=slot)
    return _best(devices, need_bytes, check=probe_device, slot=slot)


def get_runtime(device: str | None = None, need_bytes: Need = 0) -> Runtime:
    """The process's runtime for the chosen device (created once, then reused; the
    choice itself is remembered per request, memory need, environment and slot, so that
    a call in a hot path enumerates no platforms).  ``need_bytes``: see
    :func:`choose_device`."""
    return PROCESS_DEVICES.runtime(device, need_bytes)
