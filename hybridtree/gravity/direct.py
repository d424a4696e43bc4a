"""Host side of the Chamomile direct-summation kernel (cl/direct.cl)."""

from __future__ import annotations

import time

import numpy as np
import pyopencl as cl

from ..device.kernels import kernel, launch, option_sets
from ..device.runtime import DeviceInfo, Runtime, fit_work_group, pack4, split_hi_lo
from .softening import check_softening
from .tuning import TUNING, WalkTuning

def direct_defines(info: DeviceInfo, eps: float, split: bool = True,
                   work_group: int | None = None, options: dict | None = None,
                   tuning: WalkTuning = TUNING) -> dict:
    """Build-time defines of cl/direct.cl for a device: WG (work-group = tile size), NI,
    SPLIT, SELF_BRANCH, FULL_TILE, ZERO_GUARD (eps, length units, rounds to 0 in float32),
    and the device's math (:meth:`DeviceInfo.math_defines`: RSQRT_MODE).

    Without ``work_group`` WG is ``tuning``'s direct_wg of the device's kind
    (:class:`.tuning.DeviceTuning`; NI its direct_ni), made to fit the device's
    work-group limit and its local memory (16 bytes per work-item, 32 with ``split``); a
    given ``work_group`` is taken as it is (tuning).  ``options``: extra defines, applied
    last.
    """
    gpu = info.kind == "gpu"
    mine = tuning.device(info.kind)
    if work_group is None:
        # tile (and tile_lo) float4s in local memory, and a float of eps with PER_EPS
        per_item = (32 if split else 16) + (4 if (options or {}).get("PER_EPS") else 0)
        wg = fit_work_group(mine.direct_wg, info.work_group_limit(),
                            info.local_mem_limit() // per_item)
    else:
        wg = int(work_group)
    return {"WG": wg, "NI": mine.direct_ni, "SPLIT": int(split),
            "SELF_BRANCH": int(gpu), "FULL_TILE": int(gpu),
            "ZERO_GUARD": int(np.float32(eps * eps) == 0), **info.math_defines(),
            **(options or {})}


@option_sets
def direct_option_sets(info: DeviceInfo) -> list[tuple[str, dict]]:
    """cl/direct.cl's builds a device asks for: split and plain coordinates, eps zero or not
    (ZERO_GUARD), Plummer or the spline softening, one softening or one per particle
    (PER_EPS), at the default work-group and at the halves :func:`_direct_kernel` falls
    back to where the built kernel runs fewer work-items (registers: the H100 runs the
    GPU default of 512 at 256).  A kernel limit below a quarter of the default would ask
    for a build not declared here (tests/tools/test_vendor_compile.py finds it)."""
    sets = []
    for split in (True, False):
        for eps, soft in ((0.0, None), (0.01, None), (0.01, {"SOFTENING": 2}),
                          (0.0, {"PER_EPS": 1}), (0.01, {"PER_EPS": 1, "SOFTENING": 2})):
            defines = direct_defines(info, eps, split, options=soft)
            sets += [("direct.cl", {**defines, "WG": wg})
                     for wg in _fallbacks(defines["WG"], FALLBACK_HALVINGS)]
    return sets


#: the work-group halvings of a kernel build that the option sets declare
FALLBACK_HALVINGS = 2


def _fallbacks(wg: int, halvings: int) -> list[int]:
    """``wg`` and its halves (``halvings`` of them, none below 1)."""
    return sorted({max(1, wg >> k) for k in range(halvings + 1)}, reverse=True)


def _direct_kernel(rt: Runtime, defines: dict, fixed: bool) -> tuple[cl.Kernel, dict]:
    """The built kernel and its defines; a work-group the built kernel cannot run with
    (registers) is halved and the kernel built again, unless the caller ``fixed`` it."""
    while True:
        knl = kernel(rt, "direct.cl", "direct_force", defines)
        limit = rt.max_work_group_size(knl)
        if defines["WG"] <= limit:
            return knl, defines
        if fixed or defines["WG"] == 1:
            raise ValueError(f"direct kernel: a work-group of {defines['WG']} exceeds "
                             f"{limit}, the most {rt.info.label} runs it with")
        defines = {**defines, "WG": fit_work_group(limit, defines["WG"] // 2)}


def direct_forces(rt: Runtime, src_pos: np.ndarray, src_mass: np.ndarray, sink_pos: np.ndarray,
                  eps: float | np.ndarray, self_skip: bool, work_group: int | None = None,
                  split: bool = True, options: dict | None = None,
                  sink_eps: np.ndarray | None = None, tuning: WalkTuning = TUNING
                  ) -> tuple[np.ndarray, np.ndarray, dict]:
    """Accelerations (n_i, 3) and potentials (n_i,) in float64, G = 1.

    ``self_skip``: sink i is source i and exerts no force on itself.
    ``split``: hi + lo coordinates (default).  Plain float32 coordinates about the
    median source position are faster on the H100 (1.64e12 against 1.13e12 pairs/s at
    N = 2^20) but slower on PoCL 3.0 (2.9e8 against 4.2e8 on 2 cores), and their
    rounding limits the relative error of small accelerations (seen: 1e-5 at the
    centre of a 4096-particle Plummer sphere, against 5e-7 with split;
    docs/benchmarks.md).
    ``work_group``: the work-group size (default: :func:`direct_defines`).
    ``options``: extra kernel defines (tuning, e.g. ``{"RSQRT(x)": "native_rsqrt(x)"}``
    or ``{"NI": 2}``, the sinks per work-item).
    ``eps``: one softening, or one per source (an array): then a pair's is the larger of
    the sink's and the source's (GADGET-4's rule), a sink's own being its source's with
    ``self_skip`` and 0 otherwise (sinks given apart feel each source's), or ``sink_eps``
    where given (sinks that are sources too, e.g. the active ones of block steps).
    ``tuning``: the default work-group and NI per kind of device
    (:class:`.tuning.WalkTuning`).  Returns (acc, pot, timings in seconds).
    """
    per = np.ndim(eps) > 0
    eps_j = np.asarray(eps, np.float32) if per else None
    eps_min = float(eps_j.min()) if per and len(eps_j) else float(np.max(eps, initial=0.0))
    if per:
        assert eps_j.shape == (len(src_pos),), "eps: one per source"
        options = {**(options or {}), "PER_EPS": 1}
    if (options or {}).get("SOFTENING") == 2:
        check_softening("spline", eps_min)
    t0 = time.perf_counter()
    centre = np.median(src_pos, axis=0)
    defines = direct_defines(rt.info, eps_min, split, work_group, options, tuning)
    _, defines = _direct_kernel(rt, defines, fixed=work_group is not None or
                                  "WG" in (options or {}))
    wg = int(defines["WG"])
    per_group = wg * int(defines["NI"])
    n_i, n_j = len(sink_pos), len(src_pos)
    xj_hi, xj_lo = split_hi_lo(src_pos - centre)
    xi_hi, xi_lo = split_hi_lo(sink_pos - centre)
    lo_i = [rt.to_device(pack4(xi_lo))] if split else []
    lo_j = [rt.to_device(pack4(xj_lo))] if split else []
    out = rt.empty(16 * n_i)
    args = [np.int32(n_i), rt.to_device(pack4(xi_hi)), *lo_i,
            np.int32(n_j), rt.to_device(pack4(xj_hi, src_mass)), *lo_j,
            np.float32(eps_min * eps_min)]
    if per:
        eps_i = (eps_j if self_skip else np.zeros(n_i, np.float32)) if sink_eps is None \
            else np.asarray(sink_eps, np.float32)
        args += [rt.to_device(eps_i), rt.to_device(eps_j)]
    args += [np.int32(bool(self_skip)), out]
    rt.queue.finish()
    t1 = time.perf_counter()
    n_groups = -(-n_i // per_group)
    launch(rt, "direct.cl", "direct_force", n_groups * wg, *args, defines=defines, local=wg,
           fixed=True)
    rt.queue.finish()
    t2 = time.perf_counter()
    res = np.empty((n_i, 4), np.float32)
    cl.enqueue_copy(rt.queue, res, out)
    t3 = time.perf_counter()
    acc = res[:, :3].astype(np.float64)
    pot = res[:, 3].astype(np.float64)
    return acc, pot, {"upload": t1 - t0, "kernel": t2 - t1, "download": t3 - t2,
                      "split": bool(split), "work_group": wg}
