#!/usr/bin/env python3
"""Hybrid tree (n_hard hard steps per soft step) against the normal tree code run with
the hard step, on one device: the hybrid tree paper's comparison.

Both runs integrate the same Plummer sphere (Hénon units) over the same simulated time
with the same θ; the energies are K + ½ Σ m φ with the full potential.  Prints the
hard/soft interaction ratio, T_hybrid / T_normal and both energy errors.

    python scripts/bench_hybrid.py -n 100000 --t-end 0.25          # CPU (2 cores: minutes)
    python scripts/bench_hybrid.py -n 1000000 --device nvidia --t-end 0.0625
"""

from __future__ import annotations

import argparse
import json
import math
import time

import numpy as np

from hybridtree.diagnostics import energies
from hybridtree.ics import plummer
from hybridtree.integrate import GravityModel, HybridModel, hybrid_step, kdk_step
from hybridtree.splitting import Changeover


def core_spacing(n: int) -> float:
    """Mean interparticle distance in the core of a Plummer sphere (Hénon units)."""
    a = 3 * math.pi / 16
    return (n * 3 / (4 * math.pi * a ** 3)) ** (-1 / 3)


def energy(vel, mass, pot) -> float:
    return sum(energies(vel, mass, pot))


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("-n", type=int, default=100_000)
    ap.add_argument("--theta", type=float, default=0.5)
    ap.add_argument("--eps", type=float, default=0.01)
    ap.add_argument("--multipole", default="monopole")
    ap.add_argument("--dt-hard", type=float, default=1 / 256)
    ap.add_argument("--n-hard", type=int, default=4)
    ap.add_argument("--t-end", type=float, default=0.25)
    ap.add_argument("--r-out", type=float, default=None,
                    help="default: 3 x the mean interparticle distance in the core")
    ap.add_argument("--r-in", type=float, default=None, help="default: r_out / 10")
    ap.add_argument("--changeover", default="dll")
    ap.add_argument("--device", default=None)
    ap.add_argument("--seed", type=int, default=1)
    ap.add_argument("--build", choices=("device", "host"), default="device",
                    help="where the tree is built")
    ap.add_argument("--host-steps", action="store_true",
                    help="hard steps on the host (default: on the device where it can)")
    ap.add_argument("--json", action="store_true")
    a = ap.parse_args()
    r_out = a.r_out or 3 * core_spacing(a.n)
    r_in = a.r_in if a.r_in is not None else r_out / 10
    co = Changeover(r_in, r_out, a.changeover)
    pos0, vel0, m = plummer(a.n, seed=a.seed)
    kw = dict(eps=a.eps, theta=a.theta, multipole=a.multipole, device=a.device or "",
              build=a.build)
    dt_soft = a.dt_hard * a.n_hard
    n_soft = round(a.t_end / dt_soft)

    normal = GravityModel(**kw)
    hybrid = HybridModel(**kw, changeover=co, n_hard=a.n_hard, steps_on_device=not a.host_steps)
    hybrid.parts(pos0, m, ("hard", "soft", "full"))        # build the kernels first
    wp, wv = pos0.copy(), vel0.copy()                       # ... and those of the step
    w = hybrid.parts(wp, m, ("hard", "soft"))
    hybrid_step(wp, wv, w["hard"][0], w["soft"][0], m, dt_soft, hybrid)
    normal(pos0, m)

    pos, vel = pos0.copy(), vel0.copy()
    acc, pot = normal(pos, m)
    e0 = energy(vel, m, pot)
    normal.timers.__init__()
    t0 = time.perf_counter()
    for _ in range(n_soft * a.n_hard):
        pos, vel, acc, pot = kdk_step(pos, vel, acc, m, a.dt_hard, normal, normal.timers)
    t_normal = time.perf_counter() - t0
    err_normal = (energy(vel, m, pot) - e0) / abs(e0)

    pos, vel = pos0.copy(), vel0.copy()
    r = hybrid.parts(pos, m, ("hard", "soft"))
    ah, (asoft, pot) = r["hard"][0], r["soft"]
    e0h = energy(vel, m, pot)
    hybrid.timers.__init__()
    t0 = time.perf_counter()
    for _ in range(n_soft):
        pos, vel, ah, asoft, pot = hybrid_step(pos, vel, ah, asoft, m, dt_soft, hybrid,
                                               hybrid.timers)
    t_hybrid = time.perf_counter() - t0
    err_hybrid = (energy(vel, m, pot) - e0h) / abs(e0h)

    nt, ht = normal.timers, hybrid.timers
    res = {
        "n": a.n, "device": normal.last.device, "build": a.build, "theta": a.theta, "eps": a.eps,
        "multipole": a.multipole, "r_in": r_in, "r_out": r_out, "changeover": a.changeover,
        "n_hard": a.n_hard, "dt_hard": a.dt_hard, "steps_on_device": not a.host_steps,
        "t_end": n_soft * dt_soft,
        "normal_steps": n_soft * a.n_hard, "soft_steps": n_soft,
        "t_normal_s": t_normal, "t_hybrid_s": t_hybrid, "time_ratio": t_hybrid / t_normal,
        "normal_force_s": nt.soft_s / max(nt.soft_forces, 1),
        "hard_force_s": ht.hard_s / max(ht.hard_forces, 1),
        "soft_force_s": ht.soft_s / max(ht.soft_forces, 1),
        "build_s_per_tree_normal": nt.build / max(nt.soft_forces, 1),
        "hard_interactions": ht.hard_interactions / max(ht.hard_forces, 1),
        "soft_interactions": ht.soft_interactions / max(ht.soft_forces, 1),
        "normal_interactions": nt.soft_interactions / max(nt.soft_forces, 1),
        "energy_error_normal": err_normal, "energy_error_hybrid": err_hybrid,
    }
    res["hard_soft_ratio"] = res["hard_interactions"] / res["soft_interactions"]
    if a.json:
        print(json.dumps(res))
        return
    print(f"N = {a.n} on {res['device']}: theta {a.theta}, eps {a.eps}, r_in {r_in:.4g}, "
          f"r_out {r_out:.4g} ({a.changeover}), dt_hard {a.dt_hard}, n_hard {a.n_hard}, "
          f"t = {res['t_end']}")
    print(f"interactions per force: normal {res['normal_interactions']:.4g}, "
          f"hybrid soft {res['soft_interactions']:.4g}, hard {res['hard_interactions']:.4g} "
          f"(hard/soft {res['hard_soft_ratio']:.3f})")
    print(f"time per force: normal {res['normal_force_s']:.4f} s, hard {res['hard_force_s']:.4f} s, "
          f"soft {res['soft_force_s']:.4f} s (tree build {res['build_s_per_tree_normal']:.4f} s)")
    print(f"T_normal {t_normal:.2f} s ({res['normal_steps']} steps), T_hybrid {t_hybrid:.2f} s "
          f"({n_soft} soft steps): T_hybrid / T_normal = {res['time_ratio']:.3f}")
    print(f"energy error: normal {err_normal:+.3e}, hybrid {err_hybrid:+.3e}")


if __name__ == "__main__":
    main()
