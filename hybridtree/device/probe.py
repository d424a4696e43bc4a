"""The device probe: whether a device builds kernels, and how it must compute 1/sqrt.

An OpenCL device can be listed by its driver and still fail every build: PyPI's PoCL 3.0
(LLVM 14) calls a CPU newer than LLVM 14 ``generic`` and its compiler then rejects that
name.  And an implementation may compute ``rsqrt`` under ``-cl-fast-relaxed-math`` from a
hardware estimate (Intel's CPU runtime: 5.9e-5 relative), which would set the force
kernels' accuracy.  So before a device is chosen it builds ``cl/probe.cl`` with the force
kernels' own options and runs it on inputs spread over 2^-60 .. 2^60; a device whose build
fails is passed over with the compiler's one-line reason, and for one that works the
first of the three ways of ``cl/rsqrt.cl`` (``rsqrt``, ``rsqrt`` + a Newton step,
``1/sqrt``) whose largest relative error is at most :data:`RSQRT_TOLERANCE` becomes the
``RSQRT_MODE`` of its force kernels.  A device with double precision also runs
``cl/reduce.cl``'s block sum once: Intel's CPU runtime reorders a plain float64 loop sum
even without fast math, and there the reductions are built with ORDERED_SUMS so that
their bits stay the host's (``sum_mode``).

Results are cached per device, driver version and CPU in a JSON file
(:func:`cache_path`), so a probe costs one build the first time and nothing after.
"""

from __future__ import annotations

import json
import logging
import os
import re
import tempfile
import time
from collections.abc import Callable
from dataclasses import asdict, dataclass
from pathlib import Path

import numpy as np
import pyopencl as cl

from .kernels import kernel, launch, option_sets
from .reduce import BLOCK, host_block_sum, reduce_defines
from .runtime import DeviceError, DeviceInfo, EnvironmentSettingError, Runtime, user_cache_dir

logger = logging.getLogger(__name__)

__all__ = ["Probe", "RSQRT_MODES", "RSQRT_TOLERANCE", "cache_path", "probe", "reason_line"]

#: Bump when the probe's kernel or the way it decides changes: older cache entries are
#: then probed again.
PROBE_VERSION = 2
#: The largest relative error of float32 1/sqrt the force kernels accept (4 units in the
#: last place; NVIDIA's and PoCL's rsqrt measure 1.1e-7 and 8.7e-8).
RSQRT_TOLERANCE = 2.0**-21
#: The ways of cl/rsqrt.cl, by RSQRT_MODE, in the order they are tried (cheapest first).
RSQRT_MODES = ("rsqrt", "rsqrt+newton", "1/sqrt")
#: Inputs of the probe kernel.
N_INPUTS = 4096


@dataclass(frozen=True)
class Probe:
    """What the probe found on one device.  ``ok``: it built and ran the probe kernel;
    ``reason``: why not, one line; ``rsqrt_mode``: the RSQRT_MODE its force kernels use;
    ``rsqrt_errors``: the largest relative error of each mode (dimensionless);
    ``sum_mode``: how cl/reduce.cl keeps the written order of float64 sums (0: plain
    loops do, 1: with ORDERED_SUMS, -1: not at all; 0 without double precision);
    ``seconds``: how long the probe took (0.0 when it came from the cache)."""

    ok: bool
    reason: str = ""
    rsqrt_mode: int = 0
    rsqrt_errors: tuple[float, ...] = ()
    sum_mode: int = 0
    seconds: float = 0.0

    def describe(self) -> str:
        """One phrase for listings: the mode and, where rsqrt alone is not used, why."""
        if not self.ok:
            return f"unusable: {self.reason}"
        text = f"1/sqrt by {RSQRT_MODES[self.rsqrt_mode]}"
        if self.rsqrt_mode and self.rsqrt_errors:
            text += f" (rsqrt alone is off by {self.rsqrt_errors[0]:.1e})"
        if self.sum_mode == 1:
            text += ", float64 sums kept in order by volatile accumulators"
        elif self.sum_mode < 0:
            text += ", float64 sums not in the host's order (reductions within rounding)"
        return text


def cache_path() -> Path:
    """The probe cache: ``device-probes.json`` in :func:`hybridtree.device.runtime.user_cache_dir`."""
    return user_cache_dir() / "device-probes.json"


def _cpu_identity() -> str:
    """The host CPU's model line, family, model and stepping (a cache written on one
    machine of a cluster must not answer for another CPU behind the same driver)."""
    want = ("model name", "cpu family", "model", "stepping")
    found: dict[str, str] = {}
    try:
        with open("/proc/cpuinfo") as f:
            for line in f:
                key, _, value = line.partition(":")
                key = key.strip()
                if key in want and key not in found:
                    found[key] = value.strip()
                if not line.strip() and found:
                    break
    except OSError:
        import platform
        return platform.processor() or platform.machine()
    return "/".join(found.get(k, "") for k in want)


def _key(device: cl.Device, extra_options: tuple[str, ...]) -> str:
    p = device.platform
    parts = [f"v{PROBE_VERSION}", p.name.strip(), p.version.strip(), device.name.strip(),
             device.version.strip(), str(device.driver_version).strip(),
             " ".join(extra_options)]
    if device.type & cl.device_type.CPU:
        parts.append(_cpu_identity())
    return " | ".join(parts)


def _load(path: Path) -> dict:
    try:
        data = json.loads(path.read_text())
    except (OSError, ValueError):
        return {}
    return data if isinstance(data, dict) else {}


def _store(path: Path, key: str, result: Probe) -> None:
    """Add ``result`` to the cache (written whole to a temporary file and renamed, so that
    processes probing at once never leave a torn file); a cache that cannot be written
    only costs the probe again next time."""
    try:
        path.parent.mkdir(parents=True, exist_ok=True)
        data = _load(path)
        data[key] = {k: v for k, v in asdict(result).items() if k != "seconds"}
        fd, tmp = tempfile.mkstemp(dir=path.parent, prefix=".probe-", suffix=".json")
        with os.fdopen(fd, "w") as f:
            json.dump(data, f, indent=1, sort_keys=True)
        os.replace(tmp, path)
    except OSError as exc:
        logger.debug("device probe cache %s not written: %s", path, exc)


def reason_line(exc: BaseException) -> str:
    """The one line of a failed build or launch that says why: in the compiler's log
    (after pyopencl's "Build on ...:" heading) its first line naming an error, else its
    first line; without a log, the first line of the exception."""
    lines = [" ".join(ln.split()) for ln in str(exc).splitlines()]
    lines = [ln for ln in lines if ln]
    heads = [i for i, ln in enumerate(lines) if ln.startswith("Build on ")]
    log = [ln for ln in lines[heads[0] + 1:] if not ln.startswith("(options:")] if heads else []
    errors = [ln for ln in log if re.search(r"\berror\b", ln, re.IGNORECASE)]
    pick = errors or log or lines or [type(exc).__name__]
    return pick[0][:300]


def _inputs() -> tuple[np.ndarray, np.ndarray]:
    """Probe inputs (float32, normal numbers 2^-60 .. 2^60 with random mantissas) and the
    float64 1/sqrt of each."""
    rng = np.random.default_rng(20261124)
    x = np.ldexp(1.0 + rng.random(N_INPUTS), rng.integers(-60, 60, N_INPUTS)).astype(np.float32)
    return x, 1.0 / np.sqrt(x.astype(np.float64))


def _measure(info: DeviceInfo, device: cl.Device) -> tuple[Probe, bool]:
    """Build and run the probe kernel on ``device`` (a context of its own); also whether
    the result may be cached: a failed build may, a context or launch that failed may
    not (a busy or exclusive GPU is no property of the device)."""
    t0 = time.perf_counter()
    try:
        ctx = cl.Context([device])
        rt = Runtime(info, ctx, cl.CommandQueue(ctx))
    except cl.Error as exc:
        return Probe(False, reason_line(exc), seconds=time.perf_counter() - t0), False
    try:
        kernel(rt, "probe.cl", "probe_rsqrt")           # a failed build is cached too
    except EnvironmentSettingError:
        raise                   # the user's environment, not the device: nothing cached
    except DeviceError as exc:
        return Probe(False, reason_line(exc), seconds=time.perf_counter() - t0), True
    try:
        x, ref = _inputs()
        out = rt.empty(16 * len(x))
        launch(rt, "probe.cl", "probe_rsqrt", len(x), np.int32(len(x)), rt.to_device(x), out,
               local=None)
        res = np.empty((len(x), 4), np.float32)
        cl.enqueue_copy(rt.queue, res, out)
        rt.queue.finish()
    except (cl.Error, cl.RuntimeError) as exc:
        return Probe(False, reason_line(exc), seconds=time.perf_counter() - t0), False
    try:
        sum_mode = _sum_mode(rt) if rt.has_fp64 else 0
    except EnvironmentSettingError:
        raise
    except (DeviceError, cl.Error, cl.RuntimeError) as exc:
        return Probe(False, reason_line(exc), seconds=time.perf_counter() - t0), True
    errs = [float(np.max(np.abs(res[:, k] / ref - 1.0))) for k in range(3)]
    sqrt_err = float(np.max(np.abs(res[:, 3] * ref - 1.0)))
    good = [k for k, e in enumerate(errs) if e <= RSQRT_TOLERANCE]
    mode = good[0] if good else int(np.nanargmin(errs)) if np.isfinite(errs).any() else 2
    if not good or not sqrt_err <= RSQRT_TOLERANCE:
        logger.warning("%s: float32 1/sqrt or sqrt misses %.1e relative (rsqrt %.1e, "
                       "rsqrt+newton %.1e, 1/sqrt %.1e; sqrt %.1e): its forces will be less "
                       "accurate than docs/physics.md states", info.label, RSQRT_TOLERANCE,
                       *errs, sqrt_err)
    if sum_mode < 0:
        logger.warning("%s reorders float64 sums even with volatile accumulators: its "
                       "reductions agree with the host's only to rounding", info.label)
    return Probe(True, rsqrt_mode=mode, rsqrt_errors=tuple(errs), sum_mode=sum_mode,
                 seconds=time.perf_counter() - t0), True


@option_sets
def probe_option_sets(info: DeviceInfo) -> list[tuple[str, dict]]:
    """The order check's builds of cl/reduce.cl (one work-item, plain and ORDERED_SUMS)."""
    return [("reduce.cl", reduce_defines(1, sum_mode=mode)) for mode in (0, 1)]


def _sum_mode(rt: Runtime) -> int:
    """How cl/reduce.cl's block sum keeps its written order on ``rt``'s device: 0 as it
    is, 1 with ORDERED_SUMS, -1 not at all; tried on terms of mixed signs over 16
    decades, where every other order rounds differently."""
    rng = np.random.default_rng(34)
    terms = rng.standard_normal(BLOCK) * 10.0 ** rng.uniform(-8, 8, BLOCK)
    want = host_block_sum(terms[:, None])[0]        # the written order, on the host
    buf, out = rt.to_device(terms), rt.empty(8)
    for mode in (0, 1):
        launch(rt, "reduce.cl", "reduce_rows", 1, np.int32(BLOCK), np.int32(1), buf, out,
               defines=reduce_defines(1, sum_mode=mode), local=1, fixed=True)
        got = np.empty(1)
        cl.enqueue_copy(rt.queue, got, out)
        if got[0] == want:
            return mode
    return -1


def probe(info: DeviceInfo, device: cl.Device, cache: bool = True,
          measure: Callable[[DeviceInfo, cl.Device], tuple[Probe, bool]] | None = None
          ) -> Probe:
    """The probe's result for ``device`` (described by ``info``): from the cache when this
    device, driver, CPU and the extra build options (``HYBRIDTREE_CL_OPTIONS``) were
    probed before, else measured (and cached, with ``cache``, unless the failure was
    not the device's compiler).  ``measure``: what measures (default: the probe kernel's
    build and run; a test's stand-in gives (result, whether it may be cached))."""
    extra = tuple(os.environ.get("HYBRIDTREE_CL_OPTIONS", "").split())
    key = _key(device, extra)
    path = cache_path()
    if cache:
        hit = _load(path).get(key)
        if isinstance(hit, dict):
            try:
                return Probe(bool(hit["ok"]), str(hit.get("reason", "")),
                             int(hit.get("rsqrt_mode", 0)),
                             tuple(float(e) for e in hit.get("rsqrt_errors", ())),
                             int(hit.get("sum_mode", 0)))
            except (KeyError, TypeError, ValueError):
                pass                # a damaged entry: probe again
    result, keep = (measure or _measure)(info, device)
    logger.debug("probed %s in %.2f s: %s", info.label, result.seconds, result.describe())
    if cache and keep:
        _store(path, key, result)
    return result
