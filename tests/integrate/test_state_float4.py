"""A device state of float32 parts (DeviceState ``pot_part``: each part the walk's float4,
ax, ay, az, pot, its net force apart in float64) against one of float64 parts: the walk
computes every force in float32, and the kick, the downloads, the moments and the
relative criterion's a_old widen each value and subtract the net force in the float64
operations the float64 part took, so steps give the same bits with 16 bytes a part a
particle instead of 32 (acc 24 and pot 8)."""

from dataclasses import replace

import numpy as np
import pyopencl as cl
import pytest

from tests.helpers import device_state_mark, state_settings, stepping
from hybridtree.device.choice import get_runtime
from hybridtree.gravity.engine import ForceEngine, float4_part
from hybridtree.gravity.tuning import LIST_WALK, TUNING
from hybridtree.ics import plummer
from hybridtree.particles import Particles
from hybridtree.run.plan import BYTES
from hybridtree.state import DeviceState

pytestmark = device_state_mark()

SETTINGS = state_settings("plain", "hybrid", "relative")


@pytest.mark.parametrize("name", list(SETTINGS))
def test_float32_parts_step_the_float64_state_bit_for_bit(name):
    g = SETTINGS[name]
    pos, vel, m = plummer(2000, seed=5)
    four = float4_part(g, True)
    assert four == ("soft" if name == "hybrid" else "full")
    runs = [stepping(pos, vel, m, g, "device", pot_part=p) for p in (None, four)]
    assert runs[1][0].float4 and not runs[0][0].float4
    for _ in range(6):
        for state, scheme in runs:
            scheme.step(state, 1 / 128)
    (wide, _), (narrow, _) = runs
    table = wide.rt.to_device(np.arange(wide.n, dtype=np.int32)[::-1].copy())
    for how in (lambda s: s.download(), lambda s: s.download((1, table)),
                lambda s: s.download_rows(7, 1500)):
        a, b = how(wide), how(narrow)
        assert np.abs(a.acc).max() > 0 and np.abs(a.pot).max() > 0
        for field in ("pos", "vel", "acc", "pot", "mass", "ids", "types"):
            assert getattr(a, field).tobytes() == getattr(b, field).tobytes(), field
    ma, mb = wide.moments(), narrow.moments()
    assert ma["potential"] < 0 and ma.keys() == mb.keys()
    for key in ma:
        assert np.asarray(ma[key]).tobytes() == np.asarray(mb[key]).tobytes(), key
    tot = [np.empty((wide.n, 3)) for _ in range(2)]
    for s, host in zip((wide, narrow), tot):
        cl.enqueue_copy(s.rt.queue, host, s.total_acc())
    assert tot[0].tobytes() == tot[1].tobytes()
    assert wide.finite() and narrow.finite()


@pytest.mark.parametrize("parts", [("full",), ("hard", "soft")])
def test_a_state_of_float32_parts_holds_16_bytes_a_part(parts):
    """pos, vel 24 B, mass 8, IDs 4, types 1 and a float4 per part: the ledger's state
    owner grows by that (and 32 B of net force per part), the plan's lines say the same."""
    rt = get_runtime()
    n = 1000
    pos, vel, m = plummer(n, seed=2)
    p = Particles(pos, vel, m, np.arange(1, n + 1, dtype=np.uint64))
    before = rt.memory.live["state"]
    s = DeviceState(rt, p, parts, pot_part=parts[-1])
    per = 24 + 24 + 8 + 4 + 1 + 16 * len(parts)
    assert rt.memory.live["state"] - before == s.nbytes + 32 * len(parts) == n * per \
        + 32 * len(parts)
    assert BYTES["state"][0] + BYTES["state_mass"][0] + BYTES["state_part4"][0] * len(parts) == per


def test_a_non_finite_float32_part_is_seen():
    """finite() checks each float32 part as the kick widens it: a NaN in one part's
    acceleration, or an infinite net force, makes it false."""
    rt = get_runtime()
    n = 500
    pos, vel, m = plummer(n, seed=4)
    p = Particles(pos, vel, m, np.arange(1, n + 1, dtype=np.uint64))
    for where in ("acc", "net"):
        s = DeviceState(rt, p, ("hard", "soft"), pot_part="soft")
        assert s.finite()
        if where == "acc":
            vals = np.zeros((n, 4), np.float32)
            vals[17, 1] = np.nan
            cl.enqueue_copy(rt.queue, s.acc["hard"], vals)
        else:
            cl.enqueue_copy(rt.queue, s.net["soft"], np.array([np.inf, 0, 0, 1.0]))
        assert not s.finite(), where


@pytest.mark.parametrize("kernel", ["tree_walk", "tree_walk_simd", LIST_WALK])
@pytest.mark.parametrize("name", ["plain", "relative"])
def test_the_walk_writes_a_float32_part_in_place_as_the_gathered_path(kernel, name):
    """Each sink's float4 written at its caller index by the walk itself (WalkTuning
    direct_out, cl/walkcommon.cl OUT_AT: no walk_out) against walk_out gathered back
    (sort_back4): the same bits, for each walk kernel, geometric and relative (the
    second force takes a_old from the part it then overwrites)."""
    rt = get_runtime()
    g = SETTINGS[name]
    n = 1500
    pos, vel, m = plummer(n, seed=9)
    p = Particles(pos, vel, m, np.arange(1, n + 1, dtype=np.uint64))
    walk = {"KERNEL": kernel, **({"VEC": 8} if kernel == "tree_walk_simd" else {})}
    out = []
    for direct in (True, False):
        tune = replace(TUNING.for_kind(rt.info.kind, walk=walk), direct_out=direct)
        s = DeviceState(rt, p, g.parts, pot_part=float4_part(g, True))
        engine = ForceEngine(g, rt, tuning=tune)
        for _ in range(2):
            engine.compute(s, g.parts)
        host = np.empty((n, 4), np.float32)
        cl.enqueue_copy(rt.queue, host, s.acc["full"])
        out.append(host)
    assert np.abs(out[0]).min(axis=0)[3] > 0 and np.isfinite(out[0]).all()
    assert out[0].tobytes() == out[1].tobytes()
