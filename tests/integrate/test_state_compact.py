"""The run state on the device in its compact form (issue 56): GADGET types as uint8, IDs
as uint32 where every ID fits (uint64 otherwise), the downloads as before (uint64 IDs,
uint8 types, float64 values).  The ledger's state owner, the plan's line, round trips
in both ID widths (the caller's order included) and a run with IDs past 2^32."""

import numpy as np
import pyopencl as cl
import pytest

from hybridtree.device.choice import get_runtime
from hybridtree.device.clock import Clock
from hybridtree.device.transfer import download
from hybridtree.gravity.engine import ForceEngine, GravitySettings
from hybridtree.gravity.splitting import Changeover
from hybridtree.ics import plummer
from hybridtree.particles import Particles
from hybridtree.run.plan import BYTES
from hybridtree.integrate.choose import scheme_for
from hybridtree.state import DeviceState, HostState, make_state

pytestmark = pytest.mark.skipif(not get_runtime().has_fp64,
                                reason="no double precision on this device: no device state")

N = 1000
BIG = np.uint64(1 << 40)        # IDs past 2^32: kept as uint64 on the device


def particles(n: int = N, first: int | np.uint64 = 1, seed: int = 3) -> Particles:
    """n Plummer particles of random GADGET types 0..5, IDs first .. first + n - 1 in a
    shuffled order, random accelerations and potentials."""
    rng = np.random.default_rng(seed)
    pos, vel, mass = plummer(n, seed=seed)
    ids = np.uint64(first) + rng.permutation(n).astype(np.uint64)
    return Particles(pos, vel, mass, ids, rng.normal(size=(n, 3)), rng.normal(size=n),
                     rng.integers(0, 6, n).astype(np.uint8))


@pytest.mark.parametrize("parts", [("full",), ("hard", "soft")])
def test_the_state_owner_of_the_ledger_holds_the_compact_state(parts):
    """pos, vel, acc per part 24 B, mass and pot 8, IDs 4, types 1 a particle: the
    ledger's state owner grows by exactly that (today's code: 104 B for one part), and
    the plan's state lines say the same."""
    rt = get_runtime()
    before = rt.memory.live["state"]
    s = DeviceState(rt, particles(), parts)
    per = 24 * (2 + len(parts)) + 8 + 8 + 4 + 1
    assert rt.memory.live["state"] - before == s.nbytes == N * per
    assert BYTES["state"][0] + BYTES["state_mass"][0] + BYTES["state_pot"][0] \
        + BYTES["state_part"][0] * len(parts) == per
    wide = DeviceState(rt, particles(first=BIG), parts)
    assert wide.nbytes == N * (per + 4)


@pytest.mark.parametrize("first", [1, BIG], ids=["uint32", "uint64"])
def test_ids_and_types_come_back_as_they_went(first):
    """Both ID widths: a download (plain, in the caller's order on the device, by rows)
    gives the uploaded uint64 IDs, uint8 types and float64 columns exactly; the type
    counts are numpy's."""
    rt = get_runtime()
    p = particles(first=first)
    s = DeviceState(rt, p, ("full",))
    assert s.narrow == (first == 1)
    back = s.download()
    assert back.ids.dtype == np.uint64 and back.types.dtype == np.uint8
    for name in ("pos", "vel", "mass", "ids", "acc", "pot", "types"):
        assert np.array_equal(getattr(back, name), getattr(p, name)), name
    rows = s.download_rows(100, 400)
    for name in ("ids", "types", "pos"):
        assert np.array_equal(getattr(rows, name), getattr(p, name)[100:400]), name
    mine = s.download((int(first), None))           # row id - first: sorted by ID
    order = np.argsort(p.ids)
    for name in ("ids", "types", "vel", "pot"):
        assert np.array_equal(getattr(mine, name), getattr(p, name)[order]), name
    assert np.array_equal(s.type_counts(), np.bincount(p.types, minlength=6))
    mass = np.empty(N)
    for t in range(6):
        download(rt, [(s.type_mass(t), mass)])
        assert np.array_equal(mass, np.where(p.types == t, p.mass, 0.0)), t


def test_a_state_grown_for_migrants_keeps_its_narrow_columns():
    """reserve (a process receiving particles) copies every column by its own width."""
    rt = get_runtime()
    p = particles(200)
    s = DeviceState(rt, p, ("hard", "soft"))
    s.reserve(1000)
    assert s.capacity >= 1000
    back = s.download()
    assert np.array_equal(back.ids, p.ids) and np.array_equal(back.types, p.types)


def test_narrow_ids_refused_where_one_does_not_fit():
    with pytest.raises(ValueError, match="2\\^32"):
        DeviceState(get_runtime(), particles(10, first=BIG), ("full",), narrow=True)


def steps(pos, vel, mass, ids, g: GravitySettings, backend: str, n: int) -> Particles:
    """The particles after n steps of 1/256 from a start with forces (a state of
    ``backend``)."""
    rt = get_runtime()
    clock = Clock(rt)
    state = make_state(Particles(pos, vel, mass, ids), g.parts, backend, rt, clock)
    assert isinstance(state, DeviceState if backend == "device" else HostState)
    scheme = scheme_for(g, ForceEngine(g, rt, clock))
    scheme.start(state)
    for _ in range(n):
        scheme.step(state, 1 / 256)
    return state.download()


@pytest.mark.parametrize("g", [GravitySettings(eps=0.01, theta=0.6, n_leaf=8),
                               GravitySettings(eps=0.01, theta=0.6, n_leaf=8, n_hard=2,
                                               changeover=Changeover(0.01, 0.1))],
                         ids=["plain", "hybrid"])
def test_a_run_with_ids_past_two_to_the_32_steps_as_the_host_state(g):
    """IDs 2^40 + k on the device (uint64 there) and 1 + k (uint32): 6 steps give the
    host state's bits, the IDs exactly."""
    pos, vel, m = plummer(1500, seed=5)
    out = {}
    for first in (1, BIG):
        ids = np.uint64(first) + np.arange(len(m), dtype=np.uint64)
        for backend in ("host", "device"):
            out[first, backend] = q = steps(pos, vel, m, ids, g, backend, 6)
            assert np.array_equal(q.ids, ids)
    ref = out[1, "host"]
    assert np.abs(ref.pos - pos).max() > 1e-4           # they moved
    for key, q in out.items():
        for name in ("pos", "vel", "acc", "pot"):
            assert getattr(q, name).tobytes() == getattr(ref, name).tobytes(), (key, name)


class _Loopback:
    """A process 0 of 2 whose partner sends back whatever it gets (migrate's comm)."""

    rank, size = 0, 2

    def alltoallv(self, rows: np.ndarray, counts: np.ndarray) -> np.ndarray:
        return rows.copy()


@pytest.mark.parametrize("first", [1, BIG], ids=["uint32", "uint64"])
def test_migrants_carry_their_narrow_ids_and_types(first):
    """Particles of x >= 0 leave for process 1 and come back (a loopback): packed by their
    own widths (uint32 IDs and uint8 types in one word of the row, uint64 IDs in theirs),
    they come back whole, each with its own ID, type, position and acceleration."""
    from hybridtree.parallel.domain import Domains
    from hybridtree.parallel.migrate import migrate
    p = particles(first=first)
    s = DeviceState(get_runtime(), p, ("hard", "soft"))
    inf = np.array([-np.inf, np.inf])
    halves = Domains((2, 1, 1), np.array([-np.inf, 0.0, np.inf]), np.array([inf, inf]),
                     np.array([[inf], [inf]]))
    assert migrate(_Loopback(), s, halves) == int((p.pos[:, 0] >= 0).sum()) > 0
    back = s.download()
    assert not np.array_equal(back.ids, p.ids)         # those who stayed come first
    rows = np.argsort(p.ids)
    mine = np.argsort(back.ids)
    for name in ("ids", "types", "pos", "vel", "mass", "pot"):
        assert np.array_equal(getattr(back, name)[mine], getattr(p, name)[rows]), name


@pytest.mark.parametrize("caller", [False, True], ids=["state order", "caller order"])
def test_a_hybrid_download_adds_the_parts_without_a_third_buffer(caller):
    """A state of two parts downloads the sum of its accelerations with the device's
    ``add`` bits (total_acc), but adds them on the host: the state owner of the ledger
    holds no third acceleration afterwards (today's code kept 24 B a particle more)."""
    rt = get_runtime()
    p = particles()
    s = DeviceState(rt, p, ("hard", "soft"))
    rng = np.random.default_rng(8)
    parts = [rng.normal(size=(N, 3)) * 10.0 ** rng.integers(-3, 3, (N, 1)) for _ in range(2)]
    for part, a in zip(s.parts, parts):
        cl.enqueue_copy(rt.queue, s.acc[part], a)
    before = rt.memory.live["state"]
    back = s.download((1, None) if caller else None)
    assert rt.memory.live["state"] == before
    device_sum = np.empty((N, 3))
    download(rt, [(s.total_acc(), device_sum)])
    rows = np.argsort(p.ids) if caller else np.arange(N)
    assert back.acc.tobytes() == device_sum[rows].tobytes()
    assert back.acc.tobytes() == (parts[0] + parts[1])[rows].tobytes()


def test_which_ids_fit_a_uint32():
    from hybridtree.state import narrow_ids
    assert narrow_ids(np.array([], np.uint64)) and narrow_ids(np.array([0, 2**32 - 1], np.uint64))
    assert not narrow_ids(np.array([1, 2**32], np.uint64))
    assert not narrow_ids(np.array([-1, 5], np.int64))       # kept as their uint64 bits
