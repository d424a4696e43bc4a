"""The walk's tuning switches are fields passed in (hybridtree.gravity.tuning), and the
force pipeline's driver runs its stages in order (hybridtree.gravity.pipeline)."""

import numpy as np

from hybridtree.gravity.engine import ForceEngine, GravitySettings
from hybridtree.gravity.parts import FULL, LONG, SHORT
from hybridtree.gravity.pipeline import Backend, Job, drive
from hybridtree.gravity.tree import build_tree
from hybridtree.gravity.tuning import WalkTuning
from hybridtree.gravity.walk import tree_forces
from hybridtree.ics import plummer


def test_an_engine_hands_its_tuning_to_its_walks(runtime):
    """An engine made with unpacked sink groups walks them (the walk's own result with
    that switch, bit for bit), not the default packed groups, whose lists differ."""
    pos, _, mass = plummer(3000, seed=21)
    g = GravitySettings(eps=0.01, build="host", n_group=64, multipole="monopole",
                        remove_net_force=False)
    tune = WalkTuning(pack_groups=False)
    got = ForceEngine(g, runtime, tuning=tune).sink_forces(pos, mass)["full"]
    tree = build_tree(pos, mass, g.theta, g.n_leaf, multipole="monopole")
    plain = tree_forces(runtime, tree, 0.01, 64, tuning=tune)
    packed = tree_forces(runtime, tree, 0.01, 64)
    assert np.array_equal(got.acc, plain[0]) and np.array_equal(got.n_pc, plain[3])
    assert not np.array_equal(packed[3], plain[3]), "packing changed no group"


class _NoEngine:
    """A stand-in engine: the recorder's stages never read it."""


class _Recorder(Backend):
    def __init__(self):
        self._engine = _NoEngine()          # the backend holds its engine weakly
        super().__init__(self._engine)
        self.calls = []

    def sources(self, state, parts, active):
        self.calls.append("sources")
        return Job(state, parts, active, None, 5)

    def __getattribute__(self, name):
        if name in ("tree", "exchange", "walk", "long_range", "reduce_part", "received",
                    "reduce", "walk_active"):
            calls = object.__getattribute__(self, "calls")
            return lambda job, *part: calls.append(" ".join([name] + [p.name for p in part]))
        return object.__getattribute__(self, name)


def test_the_driver_runs_the_stages_in_order():
    """Each part is walked, its mesh added where the part takes it (a periodic box), and
    reduced, before what arrived late and the reductions over all parts; an active force
    stops at its walk."""
    rec = _Recorder()
    assert drive(rec, None, (SHORT, LONG), None, periodic=True) == 5
    assert rec.calls == ["sources", "tree", "exchange", "walk short", "reduce_part short",
                         "walk long", "long_range long", "reduce_part long", "received",
                         "reduce"]
    rec = _Recorder()
    drive(rec, None, (FULL,), (np.zeros(5, np.int32), 0), periodic=False)
    assert rec.calls == ["sources", "tree", "exchange", "walk_active"]


def test_lists_are_made_per_walk_from_the_kept_bytes_of_sorted_keys():
    """The one rule of the list walk (list_walk._batch_lists) and of the plan
    (run/plan.py device_plan): lists made per walk where the tree's sorted keys, 8 bytes
    a particle, take list_kept_bytes or more (2 GiB: 2^28 particles)."""
    t = WalkTuning()
    assert not t.lists_per_walk((1 << 28) - 1) and t.lists_per_walk(1 << 28)
    assert WalkTuning(list_kept_bytes=0).lists_per_walk(0)
    assert not WalkTuning(list_kept_bytes=80).lists_per_walk(9)
    assert WalkTuning(list_kept_bytes=80).lists_per_walk(10)
