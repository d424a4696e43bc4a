"""A block-step substep (forces of a random fraction of the particles) with a refit of
the last tree against a build (a tuning aid, not a test; Plummer, θ = 0.5 monopole).

    PYTHONPATH=. python scripts/tune/substep.py N ACTIVE_FRACTION [REPEATS]

Each variant starts from the first list room (list_walk._list_room cleared) and prints
the room its walks left (a long list makes every later list walk's room large).
"""
import sys, time
import numpy as np
import pyopencl as cl
from hybridtree.device.choice import get_runtime
from hybridtree.device.clock import Clock
from hybridtree.gravity.engine import ForceEngine, GravitySettings
from hybridtree.integrate.state import make_state
from hybridtree.ics import plummer
from hybridtree.particles import Particles
from hybridtree.gravity import list_walk

n, frac = int(sys.argv[1]), float(sys.argv[2])
reps = int(sys.argv[3]) if len(sys.argv) > 3 else 5
rt = get_runtime()
pos, vel, mass = plummer(n, seed=1)
bins_host = np.zeros(n, np.int32)
bins_host[np.random.default_rng(0).random(n) < frac] = 1      # active: bin >= 1
for f in (0.0, 1e9):   # 0: build every substep; huge: always refit
    list_walk._list_room.clear()
    g = GravitySettings(eps=0.01, theta=0.5, refit_fraction=min(f, 100))
    clock = Clock(rt)
    eng = ForceEngine(g, rt, clock)
    s = make_state(Particles(pos, vel, mass, np.arange(1, n + 1, dtype=np.uint64)), ("full",),
                   "device", rt, clock)
    bins = rt.to_device(bins_host)
    eng.compute(s, ("full",))                 # a full force: builds
    times = []
    for r in range(reps + 1):
        s.drift(1e-4)
        rt.queue.finish()
        t0 = time.perf_counter()
        eng.compute(s, ("full",), active=(bins, 1))
        rt.queue.finish()
        if r:
            times.append(time.perf_counter() - t0)
    full = []
    for r in range(2):
        rt.queue.finish(); t0 = time.perf_counter()
        eng.compute(s, ("full",)); rt.queue.finish()
        full.append(time.perf_counter() - t0)
    snap = clock.snapshot()
    print(f"N={n} active={frac:.3f} {'refit' if f else 'build'}: substep {1e3*np.median(times):.1f} ms "
          f"(full force {1e3*min(full):.1f} ms) room {max(list_walk._list_room.values(), default=list_walk.LIST_START)} counts {dict(eng.counts)} build/refit s {snap.get('build',0):.3f}/{snap.get('refit',0):.3f}", flush=True)
