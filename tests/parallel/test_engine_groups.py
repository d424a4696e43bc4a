"""The many-process engine's walks ask for the sink-group size of their opening criterion
(hybridtree.parallel.backends ``ParallelDeviceBackend.walk``), as the one-process engine's do
(tests/gravity/test_treewalk.py): run in one process, with the switch to larger groups
for relative walks (the engine's tuning: DeviceTuning.relative_large_group) moved down to
this test's size."""

import numpy as np
import pytest

from hybridtree.device.clock import Clock
from hybridtree.gravity import walk as treewalk
from hybridtree.gravity.tuning import TUNING
from hybridtree.gravity.engine import GravitySettings
from hybridtree.ics import plummer
from hybridtree.state import DeviceState
from hybridtree.parallel import backends as parallel_backends
from hybridtree.parallel import engine as parallel_engine
from hybridtree.parallel.comm import Comm
from hybridtree.particles import Particles

N = 5000


def test_relative_walks_of_the_parallel_engine_ask_for_their_own_group_size(runtime,
                                                                         monkeypatch):
    if not runtime.has_fp64:
        pytest.skip("a device state needs cl_khr_fp64")
    kind = runtime.info.kind
    small = treewalk.default_group(kind, N)
    tuning = TUNING.for_kind(kind, relative_large_group=(1000, 2 * small))
    asked = []
    walk_into = parallel_backends.walk_into

    def recording(rt, tree, eps, acc, pot, n_group, *args, **kwargs):
        asked.append((n_group, kwargs["criterion"].relative))
        return walk_into(rt, tree, eps, acc, pot, n_group, *args, **kwargs)

    monkeypatch.setattr(parallel_backends, "walk_into", recording)
    pos, vel, mass = plummer(N, seed=12)
    g = GravitySettings(eps=0.01, opening="relative", alpha=0.003).settled(kind, relative_ok=True)
    engine = parallel_engine.ParallelEngine(g, runtime, Comm(None), Clock(runtime),
                                            tuning=tuning)
    state = DeviceState(runtime, Particles(pos, vel, mass, np.arange(N, dtype=np.uint64)),
                        ("full",))
    engine.compute(state, ("full",))        # no a_old yet: a geometric walk
    engine.forces_known()
    engine.compute(state, ("full",))        # relative
    assert asked == [(small, False), (2 * small, True)]
