"""A generated sphere drawn block by block into a device state's rows (issue 56: the host
of a 2^30 run never holds the model whole): the same bits as the whole-array path of
:func:`hybridtree.run.setup.initial_conditions` (several blocks, several chunks, a part
block and a part chunk), host memory that does not grow with N, and the same model
whatever the number of drawing threads."""

import tracemalloc

import numpy as np
import pytest

from hybridtree.config.settings import settings_from_flat
from hybridtree.config.units import Units
from hybridtree.device.choice import get_runtime
from hybridtree.ics.rows import ModelRows
from hybridtree.ics.spheres import BLOCK, generate_share
from hybridtree.ics.threads import ordered_map
from hybridtree.run.guards import check_range
from hybridtree.run.processes import RunError
from hybridtree.run.setup import drawn_rows, initial_conditions
from hybridtree.run.start import id_range
from hybridtree.parallel.comm import Comm
from hybridtree.state import DeviceState, make_state

pytestmark = pytest.mark.skipif(not get_runtime().has_fp64,
                                reason="no double precision on this device: no device state")

#: three whole blocks and a part one
N = 3 * BLOCK + 1234


def settings(kind: str, n: int = N, **more):
    return settings_from_flat({"ics.kind": kind, "ics.n": n, "ics.seed": 11,
                               "gravity.eps": 0.01, **more})


def whole(s):
    """Today's path: the whole model on the host (initial_conditions)."""
    return initial_conditions(s, Units(s.units.length_cm, s.units.mass_g))[0]


@pytest.mark.parametrize("kind,parts", [("plummer", ("full",)), ("hernquist", ("hard", "soft")),
                                        ("cold_sphere", ("full",))])
def test_rows_drawn_into_the_state_are_the_whole_paths_bits(kind, parts):
    """Chunks of two blocks (so two whole chunks and a part one), two threads: every
    column of the state filled block by block is the whole-array path's, bit for bit, and
    so is the state made from the whole model; the bounds are the whole model's."""
    s = settings(kind)
    rows = drawn_rows(s)
    assert isinstance(rows, ModelRows) and len(rows) == N and rows.acc is None
    assert id_range(rows.ids) == 1 and list(rows.ids[:2]) == [1, 2]
    rows.rows = 2 * BLOCK
    rt = get_runtime()
    state = DeviceState.for_rows(rt, N, parts)
    rows.fill(state, threads=2)
    got = state.download()
    ref = whole(s)
    for name in ("pos", "vel", "mass", "ids", "types"):
        a, b = getattr(got, name), getattr(ref, name)
        assert a.dtype == b.dtype and a.tobytes() == b.tobytes(), name
    # the accelerations and potential start at zero, as a state of the whole model's
    other = DeviceState(rt, ref, parts).download()
    for name in ("acc", "pot"):
        assert getattr(got, name).tobytes() == getattr(other, name).tobytes(), name
    assert not got.acc.any() and not got.pot.any()
    lo, hi, total = rows.bounds
    assert np.array_equal(lo, ref.pos.min(axis=0)) and np.array_equal(hi, ref.pos.max(axis=0))
    assert total == pytest.approx(ref.mass.sum(), rel=1e-15)
    # make_state takes the rows as it takes particles
    again = make_state(drawn_rows(s), parts, "device", rt)
    assert again.download().pos.tobytes() == ref.pos.tobytes()
    host = make_state(drawn_rows(s), parts, "host", None)
    assert host.pos.tobytes() == ref.pos.tobytes()


def test_only_one_process_and_the_spheres_are_drawn_into_the_state():
    """A galaxy, a file or several processes take the whole-array path (None here)."""
    assert drawn_rows(settings("galaxy", n=1000, **{"ics.model": "milky_way"})) is None

    class Two(Comm):
        size = 2
    assert drawn_rows(settings("plummer"), Two(None)) is None


def _fill_peak(n: int) -> int:
    """Peak bytes of numpy's arrays (tracemalloc) while n Plummer particles are drawn
    into a device state in chunks of two blocks by one thread."""
    rows = drawn_rows(settings("plummer", n=n))
    rows.rows = 2 * BLOCK
    state = DeviceState.for_rows(get_runtime(), n, ("full",))
    tracemalloc.start()
    try:
        rows.fill(state, threads=1)
        return tracemalloc.get_traced_memory()[1]
    finally:
        tracemalloc.stop()


def test_the_host_holds_a_few_chunks_not_the_model():
    """From 4 to 12 blocks the peak of the host's arrays grows by less than 2 bytes a
    particle (the whole-array path holds 64 and more: float64 pos, vel, mass, uint64 IDs)."""
    small, large = _fill_peak(4 * BLOCK), _fill_peak(12 * BLOCK)
    assert large - small < 2 * 8 * BLOCK, (small, large)
    # a chunk's columns (gathered, downloaded, copied up) and a block's draw: about 220
    # bytes a row of the chunk, whatever N
    assert small < 300 * 2 * BLOCK, small


def test_threads_draw_the_same_model():
    """One thread or three: the same blocks in the same order, so the same bits."""
    one = generate_share("hernquist", 5 * BLOCK + 7, 100, 5 * BLOCK, seed=4)
    import os
    old = os.environ.get("HYBRIDTREE_DRAW_THREADS")
    os.environ["HYBRIDTREE_DRAW_THREADS"] = "3"
    try:
        three = generate_share("hernquist", 5 * BLOCK + 7, 100, 5 * BLOCK, seed=4)
    finally:
        if old is None:
            del os.environ["HYBRIDTREE_DRAW_THREADS"]
        else:
            os.environ["HYBRIDTREE_DRAW_THREADS"] = old
    for name in ("pos", "vel", "mass", "sums"):
        assert getattr(one, name).tobytes() == getattr(three, name).tobytes(), name
    assert list(ordered_map(lambda x: x * x, range(50), 4)) == [x * x for x in range(50)]


def test_a_model_beyond_the_forces_range_is_refused_naming_a_particle():
    """The range check of a model drawn into the state reads the fill's bounds, and
    where it refuses it names the particle the whole model's check names."""
    s = settings("plummer", n=2 * BLOCK, **{"gravity.eps": 1e-12, "ics.r_max": 1e6})
    rt = get_runtime()
    rows = drawn_rows(s)
    make_state(rows, ("full",), "device", rt)

    class G:
        walk_eps, method, periodic = 1e-12, "tree", None
    with pytest.raises(RunError) as drawn:
        check_range(Comm(None), rows, G, "initial conditions")
    with pytest.raises(RunError) as ref:
        check_range(Comm(None), whole(s), G, "initial conditions")
    assert str(drawn.value) == str(ref.value)


def test_the_host_plan_of_a_drawn_2_30_sphere_fits_a_128_gib_host(monkeypatch):
    """The host check of a drawn sphere counts what the host holds (a snapshot's chunk,
    the drawing's blocks, a few bytes a particle): 2^30 particles pass a host of 128 GiB
    (and meet the device check, which this machine's device fails), where the
    whole-model figure (176 B a particle) refuses them; a host of 1 GiB still refuses."""
    from hybridtree.device.runtime import DeviceError
    from hybridtree.run import size
    s = settings("plummer", n=1 << 30)
    monkeypatch.setattr(size, "host_memory_available", lambda: (128 << 30, "MemAvailable"))
    with pytest.raises(DeviceError):
        size.check_memory(s, Comm(None), 1 << 30, drawn=True)
    with pytest.raises(RunError, match="host memory"):
        size.check_memory(s, Comm(None), 1 << 30)
    monkeypatch.setattr(size, "host_memory_available", lambda: (1 << 30, "MemAvailable"))
    with pytest.raises(RunError, match=r"N = 1073741824 particles need about .* host memory "
                                       r"\(the model drawn into the device state and a "
                                       r"snapshot's host copy\)"):
        size.check_memory(s, Comm(None), 1 << 30, drawn=True)
