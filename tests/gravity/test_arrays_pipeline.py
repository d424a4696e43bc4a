"""Forces of arrays (sink_forces, the public accelerations) are sequenced by the force
pipeline's driver (hybridtree.gravity.pipeline.drive) through the engine's array
backends (hybridtree.gravity.arrays), and the public calls keep their buffers on the
runtime."""

import numpy as np
import pytest

from hybridtree.device.choice import get_runtime
from hybridtree.gravity import accelerations
from hybridtree.gravity.api import direct_reference
from hybridtree.gravity.engine import ForceEngine, GravitySettings
from hybridtree.gravity.periodic import Periodic
from hybridtree.gravity.splitting import Changeover
from hybridtree.ics import plummer

STAGES = ("sources", "tree", "exchange", "walk_active", "walk", "long_range", "reduce_part",
          "received", "reduce")


def _recorded(engine, name: str, monkeypatch) -> list[str]:
    """The stages the engine's backend ``name`` runs, in order (with the part walked)."""
    backend, calls = getattr(engine, name), []
    for stage in STAGES:
        def wrap(*args, _stage=stage, _run=getattr(backend, stage)):
            part = [a.name for a in args[1:2] if hasattr(a, "walk_key")]
            calls.append(":".join([_stage, *part]))
            return _run(*args)
        monkeypatch.setattr(backend, stage, wrap)
    return calls


CASES = {
    "resident": (dict(), "resident", {}, ["sources", "tree", "exchange", "walk:full",
                                          "reduce_part:full", "received", "reduce"]),
    "host build, foreign sinks": (dict(build="host"), "host_arrays", {"sinks": True},
                                  ["sources", "tree", "exchange", "walk:full",
                                   "reduce_part:full", "received", "reduce"]),
    "direct": (dict(method="direct"), "host_arrays", {},
               ["sources", "tree", "exchange", "walk:full", "reduce_part:full", "received",
                "reduce"]),
    "periodic box": (dict(periodic=Periodic(4.0, 32, 1.25, 4.5)), "resident", {},
                     ["sources", "tree", "exchange", "walk:full", "long_range:full",
                      "reduce_part:full", "received", "reduce"]),
    "hybrid parts": (dict(changeover=Changeover(0.1, 0.3)), "host_arrays",
                     {"parts": ("hard", "soft")},
                     ["sources", "tree", "exchange", "walk:hard", "reduce_part:hard",
                      "walk:soft", "reduce_part:soft", "received", "reduce"]),
}


@pytest.mark.parametrize("case", sorted(CASES))
def test_a_force_of_arrays_runs_the_drivers_stages_in_order(case, runtime, monkeypatch):
    """Each way of computing forces of arrays (the device's own buffers, a host build
    with foreign sinks, the direct method, a periodic box's mesh, the hybrid tree's
    parts) is the driver's sequence of stages on one backend, and its forces are those
    of direct summation (to the tree's error)."""
    knobs, name, call, expected = CASES[case]
    pos, _, mass = plummer(400, seed=5)
    if "periodic" in knobs:
        pos = np.mod(pos, 4.0)
    engine = ForceEngine(GravitySettings(eps=0.05, remove_net_force=False, **knobs), runtime)
    calls = _recorded(engine, name, monkeypatch)
    sinks = pos[:50] + 0.01 if call.get("sinks") else None
    out = engine.sink_forces(pos, mass, sinks, parts=call.get("parts"))
    assert calls == expected
    assert sorted(out) == sorted(call.get("parts", ("full",)))
    if "periodic" in knobs or "changeover" in knobs:   # their own references elsewhere
        return
    acc, _ = direct_reference(pos, mass, 0.05, sinks=sinks)
    err = np.linalg.norm(out["full"].acc - acc, axis=1) / np.linalg.norm(acc, axis=1)
    assert np.median(err) < 1e-2


def test_the_public_calls_keep_their_buffers_on_the_runtime():
    """A loop of public calls allocates nothing after the first: the buffers are the
    runtime's (``public_work``), not a module's, and the second call reuses them."""
    pos, _, mass = plummer(500, seed=3)
    first = accelerations(pos, mass, 0.05)
    work = get_runtime().public_work
    held = dict(work.buffers)
    again = accelerations(pos, mass, 0.05)
    assert held and all(work.buffers[k] is b for k, b in held.items())
    assert np.array_equal(first.acc, again.acc) and first.interactions == again.interactions
