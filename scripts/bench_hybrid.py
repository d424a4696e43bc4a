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

from hybridtree.device.clock import Clock
from hybridtree.gravity.engine import ForceEngine, GravitySettings
from hybridtree.ics import plummer
from hybridtree.particles import Particles
from hybridtree.device.choice import get_runtime
from hybridtree.integrate.schemes import scheme_for
from hybridtree.gravity.splitting import Changeover
from hybridtree.integrate.state import make_state, state_backend


def core_spacing(n: int) -> float:
    """Mean interparticle distance in the core of a Plummer sphere (Hénon units)."""
    a = 3 * math.pi / 16
    return (n * 3 / (4 * math.pi * a ** 3)) ** (-1 / 3)


def energy(state) -> float:
    m = state.moments()
    return m["kinetic"] + m["potential"]


def stepper(g: GravitySettings, p: Particles, backend: str):
    """(state, scheme, engine, clock) of a run of ``p``, forces at the start computed."""
    rt = get_runtime(g.device or None)
    clock = Clock(rt)
    state = make_state(p, g.parts, backend, rt, clock)
    engine = ForceEngine(g, rt, clock)
    scheme = scheme_for(g, engine)
    scheme.start(state)
    return state, scheme, engine, clock


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
                    help="the state on the host (default: on the device where it can be)")
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

    p0 = Particles(pos0, vel0, m, np.arange(1, a.n + 1, dtype=np.uint64))
    normal_g = GravitySettings(**kw)
    hybrid_g = GravitySettings(**kw, changeover=co, n_hard=a.n_hard)
    rt = get_runtime(a.device)
    backend = "host" if a.host_steps else state_backend(rt, "tree", a.build)
    for g, dt in ((normal_g, a.dt_hard), (hybrid_g, dt_soft)):      # build the kernels first
        state, scheme, _, _ = stepper(g, p0, backend)
        scheme.step(state, dt)

    results = {}
    for name, g, dt, steps in (("normal", normal_g, a.dt_hard, n_soft * a.n_hard),
                               ("hybrid", hybrid_g, dt_soft, n_soft)):
        state, scheme, engine, clock = stepper(g, p0, backend)
        e0 = energy(state)
        before, counts0 = clock.snapshot(), dict(engine.counts)
        rt.queue.finish()
        t0 = time.perf_counter()
        for _ in range(steps):
            scheme.step(state, dt)
        rt.queue.finish()
        wall = time.perf_counter() - t0
        sec = {k: v - before.get(k, 0.0) for k, v in clock.snapshot().items()}
        cnt = {k: v - counts0.get(k, 0) for k, v in engine.counts.items()}
        results[name] = (wall, (energy(state) - e0) / abs(e0), sec, cnt)
    (t_normal, err_normal, nsec, ncnt), (t_hybrid, err_hybrid, hsec, hcnt) = (
        results["normal"], results["hybrid"])

    def per(sec, cnt, walk, part):
        return sec.get(walk, 0.0) / max(cnt.get(f"{part}_forces", 0), 1)

    res = {
        "n": a.n, "device": rt.info.label, "build": a.build, "theta": a.theta, "eps": a.eps,
        "multipole": a.multipole, "r_in": r_in, "r_out": r_out, "changeover": a.changeover,
        "n_hard": a.n_hard, "dt_hard": a.dt_hard, "state": backend,
        "t_end": n_soft * dt_soft,
        "normal_steps": n_soft * a.n_hard, "soft_steps": n_soft,
        "t_normal_s": t_normal, "t_hybrid_s": t_hybrid, "time_ratio": t_hybrid / t_normal,
        "normal_force_s": per(nsec, ncnt, "walk_full", "full"),
        "hard_force_s": per(hsec, hcnt, "walk_hard", "hard"),
        "soft_force_s": per(hsec, hcnt, "walk_soft", "soft"),
        "build_s_per_tree_normal": nsec.get("build", 0.0) / max(ncnt.get("full_forces", 0), 1),
        "hard_interactions": hcnt.get("hard_interactions", 0) / max(hcnt.get("hard_forces", 0), 1),
        "soft_interactions": hcnt.get("soft_interactions", 0) / max(hcnt.get("soft_forces", 0), 1),
        "normal_interactions": ncnt.get("full_interactions", 0) / max(ncnt.get("full_forces", 0), 1),
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
