"""Run by tests/tools/test_oclgrind.py on the Oclgrind device (``HYBRIDTREE_DEVICE=oclgrind``):
kernel scenarios at small N, each checked against an independent answer, so that a
kernel that misbehaves only under the simulator's checks also fails here.

Usage: ``python oclgrind_worker.py SCENARIO...``; prints ``ok SCENARIO SECONDS`` per
scenario and raises (exit status 1) on a wrong result.  Oclgrind's reports (out-of-bounds
accesses, data races, uninitialised values, API errors) go to the log that the caller
names in OCLGRIND_LOG; the caller judges them.
"""

import os
import sys
import time

from pathlib import Path

import numpy as np
import pyopencl as cl

sys.path.insert(0, str(Path(__file__).resolve().parents[2]))   # tests.helpers
from tests.helpers import rel_err, stepping  # noqa: E402
from hybridtree.gravity import list_walk
from hybridtree.gravity import walk as treewalk
from hybridtree.gravity.direct import direct_forces
from hybridtree.gravity.engine import GravitySettings, float4_part
from hybridtree.gravity import accelerations, direct_reference
from hybridtree.ics import plummer
from hybridtree.device.choice import get_runtime
from hybridtree.particles import Particles
from hybridtree.parallel.device_let import local_sink_groups, select_on_device
from hybridtree.parallel.domain import Domains
from hybridtree.parallel.migrate import migrate, sample_positions
from hybridtree.integrate.schemes import BlockLeapfrog, BlockSettings
from hybridtree.device.reduce import (BLOCK, host_block_sum, host_lagrangian_radii, host_moments,
                               host_net_acceleration, reducer)
from hybridtree.gravity.splitting import Changeover
from hybridtree.gravity.tuning import WalkTuning
from hybridtree.state import DeviceState
from hybridtree.device.transfer import upload
from hybridtree.gravity.tree import build_tree
from hybridtree.device.kernels import launch, spread_local
from hybridtree.gravity.tree.device_build import DeviceArrays, build_device_tree
from hybridtree.gravity.tree.device_sort import (TUNING, Tuning, _kernels, exclusive_scan,
                                         local_bytes, radix_sort)

N = 300
EPS = 0.01


def _rt():
    rt = get_runtime()
    assert rt.info.simulator, f"not run on the simulator: {rt.info.label}"
    return rt


def _buffer(rt, a: np.ndarray) -> cl.Buffer:
    return cl.Buffer(rt.context, cl.mem_flags.READ_WRITE | cl.mem_flags.COPY_HOST_PTR,
                     hostbuf=np.ascontiguousarray(a))


def _get(rt, buf: cl.Buffer, n: int, dtype) -> np.ndarray:
    out = np.empty(n, dtype)
    cl.enqueue_copy(rt.queue, out, buf)
    return out


def direct() -> None:
    """The direct kernel (the GPU variant: self branch, full tiles, 2 sinks per item)
    against float64 sums: split and plain coordinates, other sinks, and eps = 0 with
    two coincident particles (the zero-distance guard); the device's default work-group
    once, small ones (several groups and tiles) for the rest.  N = 64 (was 128: the cost
    is N x the work-items, the default group's 512 among them): the same branches (the
    default group's one partial tile on the diagonal; at 16, 2 groups of 2 x 16 sinks,
    4 full tiles, 2 of them on a group's diagonal; 45 other sinks: a partial group)."""
    rt = _rt()
    pos, _, mass = plummer(64, seed=1)
    ref_a, ref_p = direct_reference(pos, mass, EPS)
    for split, wg, tol in ((True, None, 1e-5), (False, 16, 1e-4)):
        acc, pot, _ = direct_forces(rt, pos, mass, pos, EPS, True, wg, split)
        assert rel_err(acc, ref_a).max() < tol, (split, rel_err(acc, ref_a).max())
        assert np.allclose(pot, ref_p, rtol=tol)
    sinks = pos[:45] + 0.01
    acc, pot, _ = direct_forces(rt, pos, mass, sinks, EPS, False, 16)
    ra, rp = direct_reference(pos, mass, EPS, sinks=sinks)
    assert rel_err(acc, ra).max() < 1e-5 and np.allclose(pot, rp, rtol=1e-5)
    twin = pos.copy()
    twin[1] = twin[0]                   # coincident pair, no softening
    acc, pot, _ = direct_forces(rt, twin, mass, twin, 0.0, True, 16)
    ra, rp = direct_reference(twin, mass, 0.0)
    assert np.isfinite(acc).all() and rel_err(acc, ra).max() < 1e-4


def build() -> None:
    """The device tree build (upload on the device, Morton keys, radix sort, cells,
    moments; monopole and quadrupole) against the host build; the walk's results back
    into the caller's order."""
    rt = _rt()
    pos, _, mass = plummer(N, seed=2)
    for multipole in ("monopole", "quadrupole"):
        dev = build_device_tree(rt, pos, mass, n_leaf=8, multipole=multipole)
        host = build_tree(pos, mass, n_leaf=8, multipole=multipole, cube=dev.cube)
        d = dev.to_host()
        assert np.array_equal(d["order"], host.order) and np.array_equal(d["keys"], host.keys)
        for name in ("start", "count", "level", "next", "is_leaf"):
            assert np.array_equal(d[name], getattr(host, name)), name
        assert np.allclose(d["cell_mass"], host.cell_mass, rtol=2e-6)
        assert np.allclose(d["com"], host.com, rtol=0, atol=1e-6 * dev.cube.side)
        if multipole == "quadrupole":
            scale = np.abs(host.quad).max()
            assert np.allclose(d["quad"], host.quad, rtol=0, atol=1e-5 * scale)
    # the walk's results back into the caller's order, float32 (devices without float64)
    res = np.arange(4 * N, dtype=np.float32).reshape(N, 4)
    cnt = np.arange(2 * N, dtype=np.int32).reshape(N, 2)
    out, out_cnt = rt.empty(16 * N), rt.empty(8 * N)
    launch(rt, "treebuild.cl", "unsort", N, np.int32(N), dev.order, _buffer(rt, res),
           _buffer(rt, cnt), out, out_cnt, local=spread_local(rt.info))
    want = np.empty_like(res)
    want[d["order"]] = res
    assert np.array_equal(_get(rt, out, 4 * N, np.float32).reshape(N, 4), want)


def sort() -> None:
    """The radix sort and the scan against numpy, on sizes that span several tiles and
    blocks (a scenario of its own, split from build: each of the two stays far from the
    caller's time limit on a busy machine, and two test workers can run them at once)."""
    rt = _rt()
    rng = np.random.default_rng(3)
    # the GPU tuning (one tile of 2048 keys, 16 passes, stores in sorted order), and a
    # small one with several tiles and scan blocks and stores in input order (the CPUs'):
    # n = 300 (was 1000; Oclgrind's cost is per tile): 5 tiles of 64 keys, the last
    # partial, the digit counts' scan in 2 blocks and the values' in 5 (1000: 16 tiles,
    # 4 and 16 blocks; one chunk of block sums either way); the same kernels as often
    # the GPU tuning on key_bits = 7 (the code's 63: 16 passes of its 2048-key tile, 85 %
    # of the scenario's time): 2 passes, a full 4-bit digit and the partial 3-bit last
    # one, as 63 = 15 x 4 + 3 ends; an even count, as 16 (the same ping-pong buffers
    # last); bits 7-62 set, to be ignored in the order and kept in the keys
    for tuning, n, bits in ((TUNING["gpu"], 300, 7),
                            (Tuning(16, 4, 4, 4, sorted_stores=0), 300, 63)):
        keys = rng.integers(0, 2**63, n, dtype=np.uint64) >> rng.integers(0, 60, n,
                                                                         dtype=np.uint64)
        skeys, order = radix_sort(rt, _buffer(rt, keys), n, bits, tuning=tuning)
        want = np.argsort(keys & np.uint64(2**bits - 1), kind="stable")
        assert np.array_equal(_get(rt, order, n, np.uint32), want)
        assert np.array_equal(_get(rt, skeys, n, np.uint64), keys[want])
        values = rng.integers(0, 1000, n, dtype=np.uint32)
        out, total = exclusive_scan(rt, _buffer(rt, values), n, tuning=tuning)
        scan = _get(rt, out, n + 1, np.uint32)
        assert total == values.sum() and np.array_equal(scan[:-1], np.cumsum(values) - values)


def _tree(rt, multipole: str = "monopole", n: int = 200, seed: int = 4):
    pos, _, mass = plummer(n, seed=seed)
    return pos, mass, build_device_tree(rt, pos, mass, n_leaf=8, multipole=multipole)


def walks() -> None:
    """Both tree walks (the CPU one, tree_walk_simd, and the GPU list walk; and the
    work-group walk), monopole and quadrupole, against float64 direct sums and against
    each other; the list walk with eps = 0; the hybrid tree's soft and hard parts adding
    up to the full force.  N = 128 (was 200: the list walk's and the work-group walk's
    simulated cost grows as N^2; the uninitialised-value pass 44 -> 16 CPU s): the same
    kernels as often, 5 sink groups of the list walk (asserted: several), cells accepted
    by every walk (asserted; 48 cell interactions), and a list walk whose cells lose their
    quadrupoles still fails the comparison with tree_walk_simd."""
    rt = _rt()
    simd = {"KERNEL": "tree_walk_simd", "VEC": 8}
    default = {}
    for multipole, kernels in (("monopole", (simd, None, {"KERNEL": "tree_walk"})),
                               ("quadrupole", (simd, None))):
        pos, mass, tree = _tree(rt, multipole, n=128)
        ref_a, ref_p = direct_reference(pos, mass, EPS)
        res = []
        for opts in kernels:
            acc, pot, pp, pc, info = treewalk.tree_forces(rt, tree, EPS, 64, options=opts)
            err = rel_err(acc, ref_a)
            assert np.percentile(err, 99) < 1e-2 and err.max() < 5e-2, (opts, err.max())
            assert np.allclose(pot, ref_p, rtol=1e-2), opts
            assert (pp + pc).min() > 0 and pc.sum() > 0, opts      # cells were accepted
            assert opts is not None or info["n_groups"] > 1, info["n_groups"]
            res.append(acc)
        for acc in res[1:]:
            assert rel_err(acc, res[0]).max() < 2e-5, multipole
        default[multipole] = (pos, mass, tree, res[1])
    # the monopole tree and its default walk again (not rebuilt: simulated time)
    pos, mass, tree, full = default["monopole"]
    zero = treewalk.tree_forces(rt, tree, 0.0, 64)[0]
    assert np.isfinite(zero).all()
    assert np.percentile(rel_err(zero, direct_reference(pos, mass, 0.0)[0]), 99) < 1e-2
    co = Changeover(0.05, 0.3)
    soft = treewalk.tree_forces(rt, tree, EPS, 64, split=co, part="soft")[0]
    hard = treewalk.tree_forces(rt, tree, EPS, 64, split=co, part="hard")[0]
    assert rel_err(soft + hard, full).max() < 2e-5


def lists() -> None:
    """The list walk with list room far too small (every group overflows: the host makes
    room and walks again) and batches of a few groups, against one roomy walk.  N = 128
    (was 200; the uninitialised-value pass 14.7 CPU s at 128): the room still grows (64 ->
    128), 31 groups in batches (more than 3 asserted), and a cooperative walk whose scan
    stops at COOP / 2 still differs from the serial one."""
    rt = _rt()
    pos, mass, tree = _tree(rt, seed=6, n=128)
    list_walk.list_room(rt).room = None
    roomy = treewalk.tree_forces(rt, tree, EPS, 16)
    list_walk.list_room(rt).room = None
    # a first room of a multiple of LBUF (8); the batch budget (global memory / share)
    # holds a few groups of the grown lists
    tune = WalkTuning(list_start=64,
                      list_memory_share=rt.device.global_mem_size // (4 * 2048 * 3))
    tight = treewalk.tree_forces(rt, tree, EPS, 16, tuning=tune)
    grown = list_walk.list_room(rt).room
    assert grown > 64, grown
    assert np.array_equal(tight[0], roomy[0]) and np.array_equal(tight[2], roomy[2])
    assert tight[4]["n_groups"] > 3
    # the cooperative walk (a work-group per group, a stack in local memory and a scan)
    serial = treewalk.tree_forces(rt, tree, EPS, 16, options={"KERNEL": "walk_lists"})
    coop = treewalk.tree_forces(rt, tree, EPS, 16, options={"KERNEL": "walk_lists", "COOP": 8})
    assert np.array_equal(coop[2], serial[2]) and np.array_equal(coop[3], serial[3])
    assert rel_err(coop[0], serial[0]).max() < 1e-4


def steps() -> None:
    """Leapfrog steps with the state on the device (kicks, drifts, net-force removal,
    finiteness checks, hybrid sums) against the same steps with the state on the host:
    the same bits, plain and hybrid.  N = 72 (was 100: Oclgrind's cost grows as N^2 in the
    walk): the same kernels run as often (the fixed-order sums still reduce two blocks of
    64), one sink group (the default group of 128) with every interaction a particle's at
    either size, and 62 pairs in the changeover zone (0.05-0.3; none inside 0.05 at either
    size) for the hybrid's hard part."""
    _rt()
    pos, vel, m = plummer(72, seed=7)
    assert len(m) > BLOCK               # the sums' second level (reduce_rows) runs
    for g in (GravitySettings(eps=EPS, theta=0.6, n_leaf=8),
              GravitySettings(eps=EPS, theta=0.6, n_leaf=8, changeover=Changeover(0.05, 0.3),
                              n_hard=2)):
        runs = {b: stepping(pos, vel, m, g, b) for b in ("host", "device")}
        # float32 parts (state/parts4.py: the walk's float4 in place, net force apart)
        runs["device4"] = stepping(pos, vel, m, g, "device", pot_part=float4_part(g, True))
        for state, scheme in runs.values():
            scheme.step(state, 1 / 64)
        host = runs["host"][0].download()
        for name in ("device", "device4"):
            dev = runs[name][0].download()
            assert np.abs(dev.pos - pos).max() > 1e-4
            for field in ("pos", "vel", "acc", "pot", "mass", "ids"):
                assert getattr(dev, field).tobytes() == getattr(host, field).tobytes(), field
        four = runs["device4"][0]
        assert four.finite() and four.moments()["potential"] == runs["device"][0].moments()[
            "potential"]


def blocks() -> None:
    """Block time steps (cl/blocks.cl: bins, kicks of the active bins, walks of the
    active sinks) with the relative opening criterion, the state on the device against
    the state on the host (not the same bits: their walks of the active sinks group them
    differently; on PoCL too velocities differ by ~2e-8 of their largest); and one
    relative force against float64 sums.  N = 32 (was 64): the same bins hold particles
    (1 and 2 of max_bin = 2: one particle in bin 1 at either size, so the walks of the
    active sinks run), one sink group and particle interactions only at either size."""
    _rt()
    pos, vel, m = plummer(32, seed=13)
    g = GravitySettings(eps=EPS, theta=0.6, n_leaf=8, opening="relative")
    runs = []
    for backend in ("host", "device"):
        state, scheme = stepping(pos, vel, m, g, backend)
        scheme = BlockLeapfrog(scheme.engine, BlockSettings(eta=0.05, max_bin=2))
        scheme.step(state, 1 / 16)
        runs.append(state.download())
        assert (np.asarray(scheme.stats.particles) > 0).sum() > 1     # several bins
    for field in ("pos", "vel", "acc"):
        host, dev = getattr(runs[0], field), getattr(runs[1], field)
        assert np.abs(dev - host).max() < 1e-6 * np.abs(host).max(), field
    ref_a, _ = direct_reference(pos, m, EPS)
    f = accelerations(pos, m, EPS, opening="relative", alpha=0.002, acc_old=ref_a,
                      device="oclgrind")
    assert np.percentile(rel_err(f.acc, ref_a), 99) < 1e-2


def reductions() -> None:
    """The fixed-order float64 reductions against their numpy twins, bit for bit: block
    sums over three levels, moments, the net acceleration, Lagrangian radii, a report's
    sets (per-type moments and radii); the finiteness flag; the 64-bit sums of
    interaction counts."""
    rt = _rt()
    red = reducer(rt)
    rng = np.random.default_rng(8)
    n = 64 * 64 + 5                     # three levels of blocks
    terms = rng.normal(size=(n, 3))
    got = red.block_sum(n, 3, _buffer(rt, terms))
    assert got.tobytes() == host_block_sum(terms).tobytes()
    pos, vel, mass = plummer(N, seed=9)
    acc = rng.normal(size=(N, 3))
    d_pos, d_vel, d_mass, d_acc = upload(rt, [pos, vel, mass, acc], [None] * 4)
    pot = -rng.random(N)
    mom = red.moments(N, d_pos, d_vel, d_mass, _buffer(rt, pot))
    want = host_moments(pos, vel, mass, pot)
    for key, value in want.items():
        assert np.asarray(mom[key]).tobytes() == np.asarray(value).tobytes(), key
    net = red.net_acceleration(N, d_mass, d_acc)
    assert net.tobytes() == host_net_acceleration(mass, acc).tobytes()
    radii = red.lagrangian_radii(N, d_pos, d_mass, want["com"])
    assert radii == host_lagrangian_radii(pos, mass, want["com"])
    # a report's sets (device/reduce_sets.py): each type's moments in one chain, every
    # set's radii in one multisection, both enclosed-mass kernels; the twins' bits (the
    # first 130 particles: three blocks, so that the levels run; each multisection pass
    # is a chain of launches, 22 of them, which Oclgrind interprets item by item)
    m = 130
    types = rng.integers(1, 4, m).astype(np.uint8)
    sp, sv, sm, spot = pos[:m], vel[:m], mass[:m], pot[:m]
    d_types, d_sp, d_sm = _buffer(rt, types), _buffer(rt, sp), _buffer(rt, sm)
    moms = red.set_moments(m, d_types, [1, 2, 3], d_sp, _buffer(rt, sv), d_sm,
                           _buffer(rt, spot))
    masked = [np.where(types == t, sm, 0.0) for t in (1, 2, 3)]
    for mom_t, w in zip(moms, masked):
        twin = host_moments(sp, sv, w, spot)
        assert all(np.asarray(mom_t[k]).tobytes() == np.asarray(v).tobytes()
                   for k, v in twin.items())
    centres = [mom_t["com"] for mom_t in moms] + [want["com"]]
    totals = [mom_t["mass"] for mom_t in moms] + [float(sm.sum())]
    for each in (False, True):
        got = red.set_radii(m, d_types, [1, 2, 3, None], d_sp, d_sm, centres, totals,
                            each=each)
        assert got == [host_lagrangian_radii(sp, w, c, total_mass=t) for w, c, t in
                       zip(masked + [sm], centres, totals)], each
    assert red.all_finite(N, (d_pos, 3 * N), (d_mass, N))
    bad = vel.copy()
    bad[N // 2, 1] = np.nan
    assert not red.all_finite(N, (_buffer(rt, bad), 3 * N))
    counts = rng.integers(0, 2**30, (N, 2)).astype(np.int32)
    assert red.count_sum(N, _buffer(rt, counts)) == tuple(int(s) for s in
                                                           counts.astype(np.int64).sum(axis=0))


class _Loopback:
    """A process 0 of 2 whose partner sends back whatever it gets (migrate's comm)."""

    rank, size = 0, 2

    def alltoallv(self, rows: np.ndarray, counts: np.ndarray) -> np.ndarray:
        return rows.copy()


def let() -> None:
    """The device kernels of a run over several processes: the LET selection for other
    processes' boxes (full and hard: accepted cells and opened leaves' particles
    partition the mass of the full LET), the sink groups of a tree holding a LET (every
    local particle once), particles leaving for another domain and coming back (the same
    particles), samples of positions."""
    rt = _rt()
    pos, _, mass = plummer(N, seed=10)
    d_pos, d_mass = upload(rt, [pos, mass], [None, None])
    tree = build_device_tree(rt, DeviceArrays(d_pos, d_mass, N), None, n_leaf=8,
                             multipole="quadrupole")
    boxes = np.array([[[0.3, -1.0, -1.0], [2.0, 1.0, 1.0]], [[3.0, 3.0, 3.0], [4.0, 4.0, 4.0]]])
    full = select_on_device(tree, d_pos, d_mass, boxes)
    for b in range(len(boxes)):
        total = full.cells[b][:, 3].sum() + full.particles[b][:, 3].sum()
        assert abs(total - mass.sum()) < 1e-6 * mass.sum(), (b, total)
        assert len(full.cells[b]) > 0
    hard = select_on_device(tree, d_pos, d_mass, boxes, r_out=0.2)
    assert len(hard.cells[1]) + len(hard.particles[1]) == 0        # far box: nothing
    n_local = 200
    g = local_sink_groups(tree, n_local, 32)
    ranges = _get(rt, g.ranges, 2 * g.n_groups, np.int32).reshape(-1, 2)
    order = tree.to_host()["order"]
    members = np.concatenate([order[s:s + c] for s, c in ranges])
    assert np.array_equal(np.sort(members[members < n_local]), np.arange(n_local))
    vel = np.random.default_rng(12).normal(size=(N, 3))
    state = DeviceState(rt, Particles(pos, vel, mass, np.arange(1, N + 1, dtype=np.uint64)),
                        ("full",))
    inf = np.array([-np.inf, np.inf])
    halves = Domains((2, 1, 1), np.array([-np.inf, 0.0, np.inf]), np.array([inf, inf]),
                     np.array([[inf], [inf]]))
    assert migrate(_Loopback(), state, halves) == int((pos[:, 0] >= 0).sum()) > 0
    raw = state.download()              # the state's order: those who stayed first
    assert not np.array_equal(raw.pos, pos)
    back = state.download((1, None))    # into the IDs' order on the device (to_caller)
    assert np.array_equal(back.pos, pos) and np.array_equal(back.vel, vel)
    idx = np.array([5, 0, N - 1], np.int32)
    assert np.array_equal(sample_positions(state, idx), raw.pos[idx])


def small_limits() -> None:
    """On a GPU that reports small limits (the caller sets Oclgrind's to 64 work-items and
    16 KiB of local memory): work-group sizes and the sort's tuning fit them, and the
    forces are right."""
    rt = _rt()
    assert rt.info.kind == "gpu" and rt.info.max_work_group_size <= 64, rt.info
    pos, _, mass = plummer(200, seed=11)
    ref_a, _ = direct_reference(pos, mass, EPS)
    acc, _, t = direct_forces(rt, pos, mass, pos, EPS, True)
    assert t["work_group"] <= rt.info.max_work_group_size
    assert rel_err(acc, ref_a).max() < 1e-5
    f = accelerations(pos, mass, EPS, device="oclgrind")      # the device-resident path
    err = rel_err(f.acc, ref_a)
    assert np.percentile(err, 99) < 1e-2 and f.interactions > 0
    assert reducer(rt).wg <= 64 and local_bytes(_kernels(rt).tuning) <= 16384


def planted() -> None:
    """Kernels with planted faults (an out-of-bounds read, a read of a buffer nobody wrote,
    a race on local memory) and right results anyway: only the checks can see them, and
    the caller asserts that they do."""
    rt = _rt()
    prg = cl.Program(rt.context, """
    __kernel void oob(__global const float *x, __global float *y)
    { y[get_global_id(0)] = x[get_global_id(0) + 1] * 0.0f; }
    __kernel void uninit(__global const float *x, __global float *y)
    { const float v = x[get_global_id(0)]; y[get_global_id(0)] = v > 0.0f ? 1.0f : 1.0f; }
    __kernel void race(__global float *y)
    { __local volatile float t[1]; t[0] = (float)get_local_id(0);
      y[get_global_id(0)] = t[0] >= 0.0f ? 1.0f : 1.0f; }
    """).build()
    full = _buffer(rt, np.ones(64, np.float32))
    out = rt.empty(4 * 64)
    prg.oob(rt.queue, (64,), (64,), full, out)
    prg.uninit(rt.queue, (64,), (64,), rt.empty(4 * 64), out)
    prg.race(rt.queue, (64,), (64,), out)
    assert (_get(rt, out, 64, np.float32) == 1.0).all()


# ---- around two flaws of Oclgrind 21.10's uninitialised-value checker ----------------
# It keeps, per buffer, a "shadow" of which bytes hold defined values.  (1) A shadow is
# never dropped when its buffer is released, and a new buffer that reuses the released
# one's index inherits it, sized as the old buffer.  (2) Every write from the host (a
# write, a copy between buffers, a fill) replaces the buffer's shadow by one sized as
# that write, so after a fill of 8-byte patterns the shadow is 8 bytes long.  Either way
# the checker then drops every later store past that size and reports each load there
# as uninitialised (seen: tree arrays past the 96 bytes of a freed extent buffer, a
# device state's accelerations past the first 8 bytes after its zero fill).  So here no
# buffer is ever released, and fills and copies into buffers are done by kernels, which
# the checker follows byte by byte (an undefined source byte stays undefined).

class _KeptBuffer(cl.Buffer):
    """A buffer that is never released, so that no buffer index is reused."""

    kept: list = []

    def __init__(self, *args, **kwargs) -> None:
        super().__init__(*args, **kwargs)
        _KeptBuffer.kept.append(self)


_BYTES = """
__kernel void copy_bytes(__global uchar *dst, const ulong dst_off, __global const uchar *src,
                         const ulong src_off, const ulong n)
{ const size_t i = get_global_id(0); if (i < n) dst[dst_off + i] = src[src_off + i]; }
__kernel void fill_bytes(__global uchar *dst, const ulong off, __global const uchar *pattern,
                         const ulong width, const ulong n)
{ const size_t i = get_global_id(0); if (i < n) dst[off + i] = pattern[i % width]; }
"""
_programs: dict = {}
_host_copy, _host_fill = cl.enqueue_copy, cl.enqueue_fill_buffer


def _bytes_kernel(queue, name: str, n: int, *args, wait_for=None) -> cl.Event:
    key = (id(queue.context), name)
    if key not in _programs:
        prg = cl.Program(queue.context, _BYTES).build()
        for k in ("copy_bytes", "fill_bytes"):
            _programs[id(queue.context), k] = cl.Kernel(prg, k)
    return _programs[key](queue, (max(64, -(-n // 64) * 64),), None, *args, np.uint64(n),
                          wait_for=wait_for)


def _staged(queue, host) -> cl.Buffer:
    """A new buffer holding the bytes of ``host``, written whole (a correct shadow)."""
    data = np.frombuffer(memoryview(host).cast("B"), np.uint8)
    buf = _KeptBuffer(queue.context, cl.mem_flags.READ_ONLY, max(data.nbytes, 1))
    if data.nbytes:
        _host_copy(queue, buf, data)
    return buf


def _copy(queue, dest, src, **kw):
    """cl.enqueue_copy, with copies into a buffer made by a kernel."""
    if not isinstance(dest, cl.MemoryObjectHolder):      # a read back: unchanged
        return _host_copy(queue, dest, src, **kw)
    dst_off, src_off = int(kw.pop("dst_offset", 0)), int(kw.pop("src_offset", 0))
    count, blocking = kw.pop("byte_count", None), kw.pop("is_blocking", True)
    wait_for = kw.pop("wait_for", None)
    assert not kw, f"enqueue_copy: unexpected arguments {kw}"
    if not isinstance(src, cl.MemoryObjectHolder):
        src, src_off = _staged(queue, src), 0
    n = int(count if count is not None else src.size - src_off)
    ev = _bytes_kernel(queue, "copy_bytes", n, dest, np.uint64(dst_off), src,
                       np.uint64(src_off), wait_for=wait_for)
    if blocking:
        ev.wait()
    return ev


def _fill(queue, mem, pattern, offset, size, wait_for=None):
    """cl.enqueue_fill_buffer by a kernel."""
    pat = _staged(queue, np.ascontiguousarray(pattern))
    return _bytes_kernel(queue, "fill_bytes", int(size), mem, np.uint64(offset), pat,
                         np.uint64(pat.size), wait_for=wait_for)


def fof() -> None:
    """Friends of friends on the device (cl/fof.cl: cells, link rounds, roots), open and
    periodic, against the host's k-d tree labels."""
    from hybridtree.analysis.halos import friends_of_friends
    rng = np.random.default_rng(6)
    pos = np.concatenate([rng.normal(0.5, 0.4, (150, 3)), rng.uniform(0, 4, (150, 3))])
    for box in (None, 4.0):
        host = friends_of_friends(pos, 0.3, box=box)
        device = friends_of_friends(pos, 0.3, box=box, runtime=_rt())
        assert np.bincount(host).max() > 20 and np.array_equal(device, host), box


def compact_mesh() -> None:
    """The float32 mesh (cl/pm32.cl, cl/fft.cl) on 8^3 against the float64 host mesh: the
    deposit's integer atomics, the in-place FFT lines and half-spectrum passes."""
    from hybridtree.gravity.periodic import Periodic
    from hybridtree.gravity.pm import pm_forces
    from hybridtree.gravity.pm_compact import CompactMesh
    rng = np.random.default_rng(12)
    pos, mass = rng.uniform(-0.5, 1.5, (60, 3)), rng.uniform(0.5, 1.5, 60)
    p = Periodic(1.0, 8, asmth=0.5, rcut=2.0)
    acc, pot = CompactMesh(_rt(), p).forces(pos, mass)
    ref_acc, ref_pot = pm_forces(pos, mass, p)
    for a, b in ((acc, ref_acc), (pot, ref_pot)):
        assert np.sqrt(np.mean((a - b) ** 2) / np.mean(b ** 2)) < 2e-6


#: The kernel scenarios, and the special ones (run with other settings by the caller).
SCENARIOS = {f.__name__: f for f in (direct, build, sort, walks, lists, steps, blocks,
                                     reductions, let, fof, compact_mesh)}
SPECIAL = {f.__name__: f for f in (small_limits, planted)}

if __name__ == "__main__":
    # hybridtree looks these up in pyopencl at each call
    cl.Buffer, cl.enqueue_copy, cl.enqueue_fill_buffer = _KeptBuffer, _copy, _fill
    # the GPU sort tuning sorts 16 passes of 2048-key tiles, however few the keys: tested
    # once in sort(); elsewhere a small tuning (8 passes of 8-bit digits, tiles of 128 keys
    # in work-groups of 4) saves simulated time: a pass's counters are 2^8 per work-item,
    # so work-groups of 4 simulate an eighth of those of 32 (the sort's share of the steps
    # scenario's CPU time fell from ~60 % to ~20 %); the same kernels and branches run
    os.environ["HYBRIDTREE_SORT_TUNING"] = "4,32,8,8"
    for name in sys.argv[1:]:
        t0 = time.perf_counter()
        {**SCENARIOS, **SPECIAL}[name]()
        print(f"ok {name} {time.perf_counter() - t0:.1f}", flush=True)
