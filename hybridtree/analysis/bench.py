"""``hybridtree bench``: time one force computation on this machine and check its error.

A quick, self-contained figure (a Plummer sphere in Hénon units); the full benchmark
suite with its recorded results is ``scripts/bench_gravity.py`` / ``docs/benchmarks.md``.
"""

from __future__ import annotations

import time
from typing import Any

import numpy as np

from ..config import SCHEMA
from ..errors import UserInputError
from ..gravity.api import accelerations, direct_reference
from ..ics.spheres import plummer

__all__ = ["bench"]

#: the settings' defaults: a bench measures what a run would do unless told otherwise
_GRAVITY = SCHEMA["gravity"]


def bench(n: int = 100_000, method: str = _GRAVITY["method"].default,
          theta: float = _GRAVITY["theta"].default, eps: float = _GRAVITY["eps"].default,
          multipole: str = _GRAVITY["multipole"].default, device: str | None = None,
          repeat: int = 3, n_check: int = 500, seed: int = 1) -> dict[str, Any]:
    """Best-of-``repeat`` wall time of a force computation of ``n`` particles (Hénon
    units, softening ``eps``) and the relative acceleration error of ``n_check`` random
    sinks against float64 direct summation.  Returns a dict (seconds, interactions/s,
    error percentiles).  The defaults of ``method``, ``theta``, ``eps`` and ``multipole``
    are the settings' (``gravity.*``)."""
    if n < 2 or repeat < 1:
        raise UserInputError("bench needs n >= 2 and repeat >= 1")
    pos, _, mass = plummer(n, seed=seed)
    kw = dict(method=method, theta=theta, multipole=multipole, device=device)
    f = accelerations(pos, mass, eps, **kw)           # warm-up: kernel build, caches
    best, best_f = float("inf"), f
    for _ in range(repeat):
        t0 = time.perf_counter()
        f = accelerations(pos, mass, eps, **kw)
        dt = time.perf_counter() - t0
        if dt < best:
            best, best_f = dt, f
    rng = np.random.default_rng(seed)
    idx = rng.choice(n, size=min(n_check, n), replace=False)
    ref, _ = direct_reference(pos, mass, eps, sinks=pos[idx])
    # direct_reference with explicit sinks does not skip the sink itself; it adds nothing
    # because the self pair has zero separation and contributes zero acceleration
    err = np.linalg.norm(best_f.acc[idx] - ref, axis=1) / np.linalg.norm(ref, axis=1)
    return {"n": n, "method": method, "theta": theta, "multipole": multipole,
            "device": best_f.device, "seconds": best,
            "build_s": float(best_f.timings.get("build", 0.0)),
            "interactions": best_f.interactions,
            "interactions_per_s": best_f.interactions / best,
            "err_median": float(np.median(err)), "err_p99": float(np.percentile(err, 99))}
