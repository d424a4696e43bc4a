"""The pieces of one shared step of a device-resident run, each waited for and timed by
the host's clock (a tuning aid, not a test: the run's own breakdown uses device markers
and overlaps what it can).  Plummer sphere, monopole, the device's default walk.

    PYTHONPATH=. python scripts/tune/phases.py --device nvidia --n 1048576 4194304 16777216
"""

from __future__ import annotations

import argparse
import time

import numpy as np

from hybridtree.device import reduce
from hybridtree.device.choice import get_runtime
from hybridtree.device.transfer import Workspace
from hybridtree.gravity.tree.device_build import DeviceArrays, build_device_tree, device_groups
from hybridtree.gravity.tuning import TUNING, WalkTuning
from hybridtree.gravity.walk import walk_into
from hybridtree.gravity.walk_kernels import default_group
from hybridtree.ics import plummer
from hybridtree.state import make_state
from hybridtree.particles import Particles


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--device", default=None)
    p.add_argument("--n", type=int, nargs="+", default=[1 << 16])
    p.add_argument("--theta", type=float, default=0.5)
    p.add_argument("--eps", type=float, default=0.01)
    p.add_argument("--repeat", type=int, default=3)
    args = p.parse_args()
    rt = get_runtime(args.device)
    print(f"# {rt.info.label}  theta={args.theta} monopole eps={args.eps}; ms, best of "
          f"{args.repeat}, each piece waited for", flush=True)
    for n in args.n:
        pos, vel, mass = plummer(n, seed=1)
        s = make_state(Particles(pos, vel, mass, np.arange(n, dtype=np.uint64)), ("full",),
                       "device", rt)
        work = Workspace(rt)
        red = reduce.reducer(rt)
        best: dict[str, float] = {}

        def lap(key: str, fn):
            rt.queue.finish()
            t0 = time.perf_counter()
            out = fn()
            rt.queue.finish()
            dt = time.perf_counter() - t0
            best[key] = min(best.get(key, np.inf), dt)
            return out

        for _ in range(args.repeat + 1):           # the first pass builds the kernels too
            tree = lap("build", lambda: build_device_tree(
                rt, DeviceArrays(s.pos, s.mass, s.n), None, theta=args.theta, alloc=work))
            for k, v in tree.timings.items():
                best[f"  build.{k}"] = min(best.get(f"  build.{k}", np.inf), v)
            ng = default_group(rt.info.kind, n)
            lap("groups", lambda: device_groups(tree, ng, TUNING.pack_groups))
            counts = lap("walk", lambda: walk_into(rt, tree, args.eps, s.acc["full"], s.pot,
                                                   ng)[0])
            prof = walk_into(rt, tree, args.eps, s.acc["full"], s.pot, ng,
                             tuning=WalkTuning(profile=True))[2]
            for k, v in prof.items():
                best[f"  walk.{k}"] = min(best.get(f"  walk.{k}", np.inf), v)
            lap("count_sum", lambda: red.count_sum(n, counts))
            lap("net_force", lambda: red.subtract(
                n, s.acc["full"], red.net_acceleration(n, s.mass, s.acc["full"])))
            lap("kick+drift", lambda: (s.kick("full", 1e-9), s.drift(1e-9)))
        total = sum(v for k, v in best.items() if not k.startswith(" "))
        print(f"N = {n}: total {1e3 * total:.2f} ms")
        for k, v in best.items():
            print(f"  {k:22s} {1e3 * v:8.2f}")


if __name__ == "__main__":
    main()
