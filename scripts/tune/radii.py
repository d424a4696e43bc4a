#!/usr/bin/env python
"""Lagrangian radii on the device against the trials per pass (a tuning aid, not a
test): :meth:`hybridtree.device.reduce.Reducer.lagrangian_radii` of a Plummer sphere
(10/50/90 %) by the caller's clock, median of ``--repeat``, for each ``--trials``
(the module's TRIALS and PASSES patched); every setting must give the same radii (the
multisection's answer does not depend on its path).

    PYTHONPATH=. python scripts/tune/radii.py --device nvidia --n 4194304 16777216
"""

from __future__ import annotations

import argparse
import json
import statistics
import time

import numpy as np

from hybridtree.device import multisection, reduce
from hybridtree.device.choice import get_runtime
from hybridtree.ics import plummer


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--device", default="")
    p.add_argument("--n", type=int, nargs="+", default=[1 << 16])
    p.add_argument("--trials", type=int, nargs="+", default=[3, 7, 15])
    p.add_argument("--repeat", type=int, default=5)
    args = p.parse_args()
    rt = get_runtime(args.device or None)
    red = reduce.reducer(rt)
    for n in args.n:
        pos, _, mass = plummer(n, seed=1)
        d_pos, d_mass = rt.to_device(pos), rt.to_device(mass)
        answers = {}
        for trials in args.trials:
            passes = multisection._passes(trials)
            for mod in (multisection, reduce):
                mod.TRIALS, mod.PASSES = trials, passes
            red.lagrangian_radii(n, d_pos, d_mass, np.zeros(3))      # kernels built
            times = []
            for _ in range(args.repeat):
                t0 = time.perf_counter()
                radii = red.lagrangian_radii(n, d_pos, d_mass, np.zeros(3))
                times.append(time.perf_counter() - t0)
            answers[trials] = radii
            print(json.dumps({"n": n, "trials": trials, "passes": passes,
                              "ms": 1e3 * statistics.median(times), "radii": radii}), flush=True)
        assert len({tuple(r) for r in answers.values()}) == 1, answers


if __name__ == "__main__":
    main()
