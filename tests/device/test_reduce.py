"""Fixed-order float64 reductions (hybridtree.device.reduce): the device and its numpy twins
give the same bits, and both agree with plain numpy to rounding."""

import numpy as np
import pyopencl as cl
import pytest

from hybridtree.analysis.diagnostics import lagrangian_radii as sorted_radii
from hybridtree.ics import plummer
from hybridtree.device.reduce import (BLOCK, host_block_sum, host_lagrangian_radii, host_moments,
                               host_net_acceleration, reducer)


@pytest.fixture(scope="module")
def red(runtime):
    if not runtime.has_fp64:
        pytest.skip("device without double precision")
    return reducer(runtime)


def dev(red, a):
    return red.rt.to_device(np.ascontiguousarray(a))


def get(red, buf, shape, dtype=np.float64):
    out = np.empty(shape, dtype)
    cl.enqueue_copy(red.rt.queue, out, buf)
    return out


def same_bits(a, b) -> bool:
    """Bit identity (np.array_equal would let -0.0 equal +0.0)."""
    a, b = np.asarray(a, np.float64), np.asarray(b, np.float64)
    return a.shape == b.shape and np.array_equal(a.view(np.uint64), b.view(np.uint64))


def nasty(rng, n, k):
    """Terms of mixed signs over 16 decades, so that every order rounds differently."""
    return rng.standard_normal((n, k)) * 10.0 ** rng.uniform(-8, 8, (n, k))


@pytest.mark.parametrize("n", [0, 1, 63, 64, 65, 4097, 300001])
@pytest.mark.parametrize("k", [1, 5])
def test_block_sum_device_equals_host(red, n, k):
    terms = nasty(np.random.default_rng(n + k), n, k)
    host = host_block_sum(terms)
    assert host.shape == (k,)
    assert same_bits(red.block_sum(n, k, dev(red, terms)), host)
    scale = np.abs(terms).sum(axis=0)
    assert np.all(np.abs(host - terms.sum(axis=0)) <= 1e-14 * scale)


def sequential_reference(x: list[float]) -> float:
    """The fixed order written out in plain Python floats (IEEE doubles)."""
    rows = list(x)
    while True:
        out = []
        for j in range(0, len(rows), BLOCK):
            block = rows[j:j + BLOCK] + [0.0] * (BLOCK - len(rows[j:j + BLOCK]))
            s = block[0]
            for v in block[1:]:
                s = s + v
            out.append(s)
        rows = out
        if len(rows) == 1:
            return rows[0]


def test_host_block_sum_is_the_fixed_order():
    terms = nasty(np.random.default_rng(3), 4097, 1)[:, 0]
    assert host_block_sum(terms[:, None])[0] == sequential_reference(terms.tolist())
    pad = np.zeros(65 * BLOCK)
    pad[:4097] = terms
    level1 = np.cumsum(pad.reshape(65, BLOCK), axis=1)[:, -1]     # numpy's sequential cumsum
    level2 = np.cumsum(np.concatenate([level1, np.zeros(2 * BLOCK - 65)]).reshape(2, BLOCK),
                       axis=1)[:, -1]
    assert host_block_sum(terms[:, None])[0] == np.cumsum(np.pad(level2, (0, BLOCK - 2)))[-1]
    assert host_block_sum(terms[:, None])[0] != np.sum(terms)   # the order matters here
    # the first term starts the sum (s = x0), but padding still adds +0.0 to it
    assert same_bits(host_block_sum(np.array([[-0.0]])), [0.0])


@pytest.mark.parametrize("n", [1, 64, 65])
def test_block_sum_signed_zeros(red, n):
    # s = x0 (not 0.0 + x0): a block of -0.0 sums to -0.0; padding adds +0.0
    terms = np.full((n, 2), -0.0)
    terms[:, 1] = 1.0
    terms[0, 1] = -0.0
    host = host_block_sum(terms)
    assert same_bits(host, [0.0 if n % BLOCK else -0.0, n - 1.0])
    assert same_bits(red.block_sum(n, 2, dev(red, terms)), host)
    # the same through a level-1 kernel of its own (net_terms)
    mass, acc = np.ones(n), np.full((n, 3), -0.0)
    net = host_net_acceleration(mass, acc)
    assert same_bits(net, np.full(3, 0.0 if n % BLOCK else -0.0))
    assert same_bits(red.net_acceleration(n, dev(red, mass), dev(red, acc)), net)


def test_net_acceleration_and_subtract(red):
    rng = np.random.default_rng(5)
    n = 10_000
    mass = rng.uniform(0.1, 1.0, n) / n
    acc = nasty(rng, n, 3)
    d_mass, d_acc = dev(red, mass), red.rt.empty(acc.nbytes)
    cl.enqueue_copy(red.rt.queue, d_acc, acc)
    shift = red.net_acceleration(n, d_mass, d_acc)
    host = host_net_acceleration(mass, acc)
    assert same_bits(shift, host)
    assert np.allclose(host, mass @ acc / mass.sum(), rtol=0, atol=1e-13 * (mass @ np.abs(acc)))
    red.subtract(n, d_acc, shift)
    acc -= host
    assert same_bits(get(red, d_acc, (n, 3)), acc)
    zero = np.zeros(n)
    assert np.array_equal(red.net_acceleration(n, dev(red, zero), d_acc), np.zeros(3))
    assert np.array_equal(host_net_acceleration(zero, acc), np.zeros(3))


def test_net_force_removed_on_the_device_has_the_host_bits(red):
    """remove_net (sums and subtraction on the device, nothing read) against the host's
    net acceleration subtracted on the host; zero total mass leaves acc as it was."""
    rng = np.random.default_rng(6)
    for n in (1, 65, 10_000):
        mass = rng.uniform(0.1, 1.0, n) / n
        acc = nasty(rng, n, 3)
        d_acc = dev(red, acc)
        red.remove_net(n, dev(red, mass), d_acc)
        assert same_bits(get(red, d_acc, (n, 3)), acc - host_net_acceleration(mass, acc))
        red.remove_net(n, dev(red, np.zeros(n)), d_acc)
        assert same_bits(get(red, d_acc, (n, 3)), acc - host_net_acceleration(mass, acc))


@pytest.fixture(scope="module")
def cluster():
    pos, vel, mass = plummer(20000, seed=1)
    pot = -np.random.default_rng(2).uniform(0.5, 3.0, len(mass))
    return pos, vel, mass, pot


@pytest.mark.parametrize("with_pot", [True, False])
def test_moments(red, cluster, with_pot):
    pos, vel, mass, pot = cluster
    pot = pot if with_pot else None
    n = len(mass)
    got = red.moments(n, dev(red, pos), dev(red, vel), dev(red, mass),
                      dev(red, pot) if with_pot else None)
    host = host_moments(pos, vel, mass, pot)
    assert got.keys() == host.keys()
    for key in got:
        assert same_bits(got[key], host[key]), key
    # independent formulas; the Plummer sphere is centred at rest, so vectors near 0 are
    # compared with their terms' scale (Σ m |x| etc.), scalars relatively
    m_tot = mass.sum()
    ref = {"mass": m_tot, "com": mass @ pos / m_tot,
           "kinetic": 0.5 * mass @ (vel**2).sum(axis=1),
           "potential": 0.5 * mass @ pot if with_pot else 0.0,
           "momentum": mass @ vel, "angular_momentum": mass @ np.cross(pos, vel)}
    scale = {"mass": m_tot, "com": mass @ np.abs(pos) / m_tot, "kinetic": ref["kinetic"],
             "potential": abs(ref["potential"]), "momentum": mass @ np.abs(vel),
             "angular_momentum": mass @ np.abs(np.cross(pos, vel))}
    for key in ref:
        assert np.all(np.abs(host[key] - ref[key]) <= 1e-12 * np.asarray(scale[key])), key


def test_lagrangian_radii_match_sorting(red):
    # Exact comparison needs cumulative masses that round the same in any order: equal
    # masses 1/N with N a power of two make every partial sum (and f * M) exact, so the
    # multisection's enclosed masses equal the sorted cumulative sums.
    pos, _, mass = plummer(2**14, seed=4)
    assert np.all(mass == 2.0**-14)
    centre = mass @ pos / mass.sum()          # the centre sorted_radii uses
    fractions = (0.01, 0.1, 0.5, 0.9, 1.0)
    got = red.lagrangian_radii(len(mass), dev(red, pos), dev(red, mass), centre, fractions)
    ref = sorted_radii(pos, mass, fractions)
    assert np.allclose(got, ref, rtol=1e-12, atol=0)
    assert got == host_lagrangian_radii(pos, mass, centre, fractions)


def test_lagrangian_radii_unequal_masses_device_equals_host(red):
    rng = np.random.default_rng(6)
    pos = rng.standard_normal((3000, 3))
    mass = rng.uniform(0.5, 2.0, 3000)
    centre = np.array([0.1, -0.2, 0.05])
    got = red.lagrangian_radii(3000, dev(red, pos), dev(red, mass), centre, total_mass=2900.0)
    assert got == host_lagrangian_radii(pos, mass, centre, total_mass=2900.0)
    d = pos - centre
    r = np.sqrt((d[:, 0] * d[:, 0] + d[:, 1] * d[:, 1]) + d[:, 2] * d[:, 2])
    assert set(got) <= set(r)                 # particle radii, not radii near them


def test_lagrangian_radii_device_loop_equals_the_host_driven_loop(red):
    """One process runs the multisection on the device (one read back); many drive it
    from the host with a sum over processes per pass; both must end on the same
    particle radius, also across 14 decades of radius (outliers, a particle at the
    centre) and for a fraction above 1 (the largest radius)."""
    rng = np.random.default_rng(11)
    pos = rng.standard_normal((5000, 3)) * 1e-6
    pos[:40] *= 1e14                          # outliers: rmax / r_half ~ 1e14
    pos[40] = 0.0
    mass = rng.uniform(0.5, 2.0, 5000)
    fractions = (1e-4, 0.3, 0.5, 0.999, 1.5)
    here = red.lagrangian_radii(5000, dev(red, pos), dev(red, mass), np.zeros(3), fractions)
    driven = red.lagrangian_radii(5000, dev(red, pos), dev(red, mass), np.zeros(3), fractions,
                                  combine=lambda values, op: values)
    assert here == driven == host_lagrangian_radii(pos, mass, np.zeros(3), fractions)
    r = np.sqrt((pos[:, 0] * pos[:, 0] + pos[:, 1] * pos[:, 1]) + pos[:, 2] * pos[:, 2])
    order = np.argsort(r, kind="stable")
    cum = np.cumsum(mass[order])
    for f, got in zip(fractions[:-1], here):  # sorted cumulative sums: the same particle
        k = int(np.searchsorted(cum, f * cum[-1]))   # up to rounding near the crossing
        assert got in r[order[max(k - 1, 0):k + 2]]
    assert here[-1] == r.max()


@pytest.mark.parametrize("case", ["one", "coincident", "coincident_off_centre"])
def test_lagrangian_radii_degenerate(red, case):
    n = 1 if case == "one" else 500
    pos = np.tile([[0.3, -0.4, 1.2]], (n, 1))
    mass = np.full(n, 1.0 / n)
    centre = np.zeros(3) if case != "coincident" else pos[0]
    expect = 0.0 if case == "coincident" else float(np.sqrt(0.09 + 0.16 + 1.44))
    got = red.lagrangian_radii(n, dev(red, pos), dev(red, mass), centre)
    assert got == [expect] * 3
    assert host_lagrangian_radii(pos, mass, centre) == got


def test_lagrangian_radii_empty(red):
    assert all(np.isnan(red.lagrangian_radii(0, red.rt.empty(8), red.rt.empty(8), np.zeros(3))))


def test_all_finite(red):
    n = 1001
    a, b = np.ones((n, 3)), np.ones(n)
    assert red.all_finite(n, (dev(red, a), 3 * n), (dev(red, b), n))
    a[-1, -1] = np.nan
    assert not red.all_finite(n, (dev(red, b), n), (dev(red, a), 3 * n))
    assert red.all_finite(n, (dev(red, a), 3 * n - 1))     # the NaN is past the count
    b[0] = -np.inf
    assert not red.all_finite(n, (dev(red, b), n))


def test_count_sum(red):
    n = 5000
    counts = np.random.default_rng(7).integers(0, 2**30, (n, 2), dtype=np.int32)
    want = counts.astype(np.int64).sum(axis=0)
    assert want.min() > 2**31
    assert red.count_sum(n, dev(red, counts)) == (int(want[0]), int(want[1]))
    assert red.count_sum(0, red.rt.empty(8)) == (0, 0)


def test_count_sums_add_up_on_the_device(red):
    """A Tally's device sums, read once after several forces, equal the host's sums."""
    from hybridtree.gravity.counts import Tally
    rng = np.random.default_rng(8)
    tally, want = Tally(red.rt), {"full": 0, "soft": 0}
    for part, n in (("full", 5000), ("soft", 70), ("full", 1), ("full", 0)):
        counts = rng.integers(0, 2**30, (max(n, 1), 2), dtype=np.int32)
        tally.add_device(part, n, dev(red, counts))
        want[part] += int(counts[:n].astype(np.int64).sum())
    tally.add_interactions("hard", 12)
    got = tally.read()
    assert got["full_interactions"] == want["full"] and got["soft_interactions"] == want["soft"]
    assert got["interactions"] == want["full"] + want["soft"] + 12
    assert tally.read()["interactions"] == got["interactions"]      # read: sums zeroed
    tally.add_device("full", 1, dev(red, np.array([[3, 4]], np.int32)))
    assert tally.read()["full_interactions"] == want["full"] + 7


def test_reducer_is_kept_per_context(red):
    assert reducer(red.rt) is red


def test_the_gpus_unfused_levels_keep_no_level_rows(red):
    """The GPUs' path (levels 1 and 2 in two kernels, forced here by ``fuse=False``) gives
    the fused path's bits.  From ``rows_apart_from`` particles on it keeps none of its
    level-1 rows (8 K / BLOCK bytes a particle: 2.6 for the radii's 21 sums) once a
    reduction is done: kept, they sat beside a run's walk (4.8 B a particle on the H200,
    issue 56); what stays are the next levels' rows, BLOCK times fewer.  Below it the
    rows are kept between calls (no buffer made each call)."""
    from hybridtree.device.reduce import Reducer
    ledger = red.rt.memory
    if ledger is None:
        pytest.skip("no ledger on a simulator")
    n = 1 << 17
    pos, vel, mass = plummer(n, seed=9)
    p, v, m = dev(red, pos), dev(red, vel), dev(red, mass)
    fused = red.moments(n, p, v, m), red.lagrangian_radii(n, p, m, np.zeros(3))
    gpu_path = Reducer(red.rt, fuse=False)
    gpu_path.rows_apart_from = n
    before = ledger.live["reductions"]
    got = gpu_path.moments(n, p, v, m), gpu_path.lagrangian_radii(n, p, m, np.zeros(3))
    red.rt.queue.finish()
    kept = ledger.live["reductions"] - before
    assert kept <= 8 * 21 * n / BLOCK**2 * 1.2 + 4096, kept / n       # 0.05 B/p, not 2.6
    gpu_path.rows_apart_from = n + 1
    again = gpu_path.moments(n, p, v, m), gpu_path.lagrangian_radii(n, p, m, np.zeros(3))
    red.rt.queue.finish()
    from hybridtree.device.transfer import copies
    assert copies(red.rt).scratch["reduce.rows"][1] >= 8 * 21 * n / BLOCK   # the rows, kept
    assert again[1] == got[1] and all(same_bits(again[0][key], got[0][key]) for key in got[0])
    assert got[1] == fused[1] == host_lagrangian_radii(pos, mass, np.zeros(3))
    assert all(same_bits(got[0][key], fused[0][key]) for key in fused[0])
