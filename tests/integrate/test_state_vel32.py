"""Float32 velocities in the run state (memory.velocities = "float32", issue 56): a kick
computes in float64 and rounds each velocity once, a drift widens it exactly, on the
device (cl/state.cl VEL_T float) as on the host (numpy), so both backends step the same
particles to the same bits; downloads give the float32 values as float64 (exact)."""

import numpy as np
import pytest

from hybridtree.device.choice import get_runtime
from hybridtree.device.clock import Clock
from hybridtree.gravity.engine import ForceEngine, GravitySettings
from hybridtree.gravity.splitting import Changeover
from hybridtree.ics import plummer
from hybridtree.integrate.choose import scheme_for
from hybridtree.particles import Particles
from hybridtree.state import DeviceState, HostState, make_state

pytestmark = pytest.mark.skipif(not get_runtime().has_fp64,
                                reason="no double precision on this device: no device state")

#: name -> (gravity settings, the device state's float32 part, one mass for all)
CASES = {
    "plain, float4 parts": (GravitySettings(eps=0.01, theta=0.6, n_leaf=8), "full", True),
    "hybrid, float64 parts": (GravitySettings(eps=0.01, theta=0.6, n_leaf=8,
                                              changeover=Changeover(0.01, 0.1), n_hard=3),
                              None, False),
}


def particles(n: int, seed: int) -> Particles:
    pos, vel, m = plummer(n, seed=seed)
    return Particles(pos, vel, m, np.arange(1, n + 1, dtype=np.uint64))


def stepped(p: Particles, g: GravitySettings, backend: str, pot_part, uniform: bool,
            vel32: bool, steps: int):
    rt = get_runtime()
    clock = Clock(rt)
    state = make_state(p, g.parts, backend, rt, clock,
                       pot_part=pot_part if backend == "device" else None,
                       uniform=uniform, vel32=vel32)
    scheme = scheme_for(g, ForceEngine(g, rt, clock))
    scheme.start(state)
    for _ in range(steps):
        scheme.step(state, 1 / 128)
    return state


def is_float32(a: np.ndarray) -> bool:
    return bool(np.array_equal(a.astype(np.float32).astype(np.float64), a))


@pytest.mark.parametrize("name", list(CASES))
def test_host_and_device_states_with_float32_velocities_step_the_same_bits(name):
    """15 steps of the same particles, float32 velocities, host and device states: the
    same bits in every field and in the moments (the kinetic energy read from float32
    velocities, summed in float64); every velocity a float32 value.  The float64 state's
    velocities are not (the setting is no no-op) and lie within float32's rounding of
    these (the few steps amplify no difference yet)."""
    g, pot_part, uniform = CASES[name]
    p = particles(2000, 31)
    host, dev = (stepped(p, g, b, pot_part, uniform, True, 15) for b in ("host", "device"))
    assert isinstance(dev, DeviceState) and isinstance(host, HostState)
    assert dev.vel_bytes == 12 and host.vel.dtype == np.float32
    a, b = host.download(), dev.download()
    assert np.abs(b.pos - p.pos).max() > 1e-3                    # they moved
    for field in ("pos", "vel", "acc", "pot", "mass", "ids"):
        assert getattr(a, field).tobytes() == getattr(b, field).tobytes(), field
    assert b.vel.dtype == np.float64 and is_float32(b.vel)
    mh, md = host.moments(), dev.moments()
    for key in ("kinetic", "potential", "momentum", "angular_momentum", "com"):
        assert np.asarray(mh[key]).tobytes() == np.asarray(md[key]).tobytes(), key
    wide = stepped(p, g, "device", pot_part, uniform, False, 15).download()
    assert not is_float32(wide.vel)
    assert np.abs(wide.vel - b.vel).max() < 1e-5 * np.abs(wide.vel).max()


def test_a_kick_rounds_once_and_a_drift_widens():
    """One kick and one drift of a device state of float32 velocities against Python's
    own float64 arithmetic (float(np.float32(v + dt * a)), x + dt * v), value by value;
    and the Λ term's kick (kick_linear) likewise."""
    rt = get_runtime()
    rng = np.random.default_rng(3)
    n = 300
    p = Particles(rng.normal(size=(n, 3)), rng.normal(size=(n, 3)), np.full(n, 1.0 / n),
                  np.arange(1, n + 1, dtype=np.uint64))
    state = DeviceState(rt, p, ("full",), vel32=True)
    acc = rng.normal(size=(n, 3)) * 1e-3
    import pyopencl as cl
    cl.enqueue_copy(rt.queue, state.acc["full"], acc)
    v0 = state.download().vel
    assert np.array_equal(v0, p.vel.astype(np.float32))          # rounded once at upload
    dt = 0.0078125 * 1.1
    state.kick("full", dt)
    v1 = state.download().vel
    want = [float(np.float32(v + dt * a)) for v, a in zip(v0.ravel(), acc.ravel())]
    assert v1.ravel().tolist() == want
    state.drift(dt)
    x1 = state.download().pos
    assert x1.ravel().tolist() == [x + dt * v for x, v in zip(p.pos.ravel(), v1.ravel())]
    state.kick_linear(0.7, dt)
    v2 = state.download().vel
    c = dt * 0.7
    assert v2.ravel().tolist() == [float(np.float32(v + c * x))
                                   for v, x in zip(v1.ravel(), x1.ravel())]


def test_drawn_rows_give_the_whole_models_float32_velocities():
    """A Plummer model drawn block by block into a device state of float32 velocities
    (uploaded rounded, moved to the centre-of-mass frame on the device: shift3_vel) holds
    the bits of the whole model made on the host for a host state of float32 velocities
    (ModelRows.particles(vel32=True)), and of the float64 whole model's positions."""
    from hybridtree.ics.rows import model_rows
    from hybridtree.ics.spheres import BLOCK
    rt = get_runtime()
    n = 2 * BLOCK + 123

    def rows():
        return model_rows("plummer", n, 9, lambda p: None, r_max=100.0)

    dev = make_state(rows(), ("full",), "device", rt, pot_part="full", uniform=True,
                     vel32=True)
    host = make_state(rows(), ("full",), "host", rt, vel32=True)
    a, b = host.download(), dev.download()
    for field in ("pos", "vel", "mass", "ids"):
        assert getattr(a, field).tobytes() == getattr(b, field).tobytes(), field
    assert is_float32(b.vel)
    whole = rows().particles()
    assert whole.pos.tobytes() == b.pos.tobytes()
    assert np.abs(whole.vel - b.vel).max() <= 2 ** -23 * np.abs(whole.vel).max()


def test_a_non_finite_float32_velocity_is_found():
    """The finite check reads float32 velocities (their own kernel): a NaN velocity is
    found and its particle named, in a state of float4 parts and of float64 parts."""
    p = particles(500, 4)
    for pot_part in ("full", None):
        state = make_state(p, ("full",), "device", get_runtime(), pot_part=pot_part,
                           vel32=True)
        assert state.finite()
        state.poison()
        assert not state.finite()
        assert state.bad_ids().tolist() == [1]


def test_the_state_holds_12_bytes_a_particle_less():
    """The ledger's state bytes of a state of float32 velocities: 12 a particle fewer
    than of float64 ones, as DeviceState.nbytes says."""
    rt = get_runtime()
    p = particles(4096, 5)
    sizes = []
    for vel32 in (False, True):
        before = rt.memory.live["state"]
        s = DeviceState(rt, p, ("full",), pot_part="full", vel32=vel32)
        sizes.append(rt.memory.live["state"] - before)
        assert sizes[-1] == s.nbytes + 32            # the part's net force: 4 float64
        del s
    assert sizes[0] - sizes[1] == 12 * 4096


def test_block_steps_kick_and_bin_float32_velocities_alike_on_both_backends():
    """The block steps' kernels with float32 velocities (cl/blocks.cl VEL_T float): bins
    from the acceleration and the speed (eta_v), a kick of the Λ term's form (lam) and a
    kick from a table, on a device state and a host state of the same particles and
    forces: the same bins and the same velocity bits, every one a float32 value."""
    import hybridtree.integrate.timebins as tb
    g = GravitySettings(eps=0.01, theta=0.6, n_leaf=8)
    p = particles(1500, 8)
    host, dev = (stepped(p, g, b, None, False, True, 0) for b in ("host", "device"))
    hb, db = tb.bins_for(host), tb.bins_for(dev)
    assert isinstance(db, tb.DeviceBins) and isinstance(hb, tb.HostBins)
    q0, qv = tb.bin_scale(1 / 16, 0.2, 0.01), (1 / 16 / (0.5 * 0.01)) ** 2
    table = np.ldexp(1 / 64, -np.arange(tb.NBINS))
    for bins in (hb, db):
        bins.assign(0, 6, q0, 0.0, qv=qv)
        bins.kick(0, 1 / 32, 0.3)
        bins.kick_table(1, table, "full")
        bins.assign(1, 6, q0, 0.0, qv=qv)
    counts = db.counts()
    assert counts.tolist() == hb.counts().tolist() and np.count_nonzero(counts) > 2
    a, b = host.download(), dev.download()
    assert a.vel.tobytes() == b.vel.tobytes() and is_float32(b.vel)
    assert not np.array_equal(b.vel, p.vel.astype(np.float32))       # they were kicked


@pytest.mark.parametrize("backend", ["device", "host"])
def test_block_steps_of_one_bin_are_the_shared_leapfrog_with_float32_velocities(
        backend, monkeypatch):
    """test_block_steps.py's bin-0 run with float32 velocities: block steps whose
    particles all stay in bin 0 give the shared leapfrog's bits."""
    import hybridtree
    monkeypatch.setenv("HYBRIDTREE_STATE", backend)
    pos, vel, mass = plummer(500, seed=6)
    common = {"time.dt": 1 / 64, "gravity.eps": 0.05, "memory.velocities": "float32"}
    shared = hybridtree.Simulation(pos, vel, mass, quiet=True, settings=common)
    blk = hybridtree.Simulation(pos, vel, mass, quiet=True, settings={
        **common, "time.stepping": "block", "time.eta": 10.0, "time.max_bin": 12})
    shared.step(4)
    blk.step(4)
    assert blk._stepper.state.vel.dtype == np.float32 if backend == "host" else \
        blk._stepper.state.vel_bytes == 12
    np.testing.assert_array_equal(blk.pos, shared.pos)
    np.testing.assert_array_equal(blk.vel, shared.vel)
    assert is_float32(np.asarray(blk.vel))
