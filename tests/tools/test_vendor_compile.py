"""Compile checks for AMD and Intel (issue 22): every kernel build the code can request
(tools.kernel_builds) compiled by clang for AMD CDNA and RDNA GPUs and to SPIR /
SPIR-V for Intel's runtimes (tools.vendor_compile).  The enumeration's own tests run
everywhere; the compiles need Debian's clang-14 (clang-19 adds gfx942 and gfx1100,
llvm-spirv-14 adds SPIR-V) and are skipped without it, saying so."""

import warnings
from pathlib import Path

import pytest

import numpy as np
import pyopencl as cl

from tools import kernel_builds
from tools.covering import cover
from tools.kernel_builds import (PROFILES, WALK_AXES, Build, all_builds, option_cover,
                                 profile_builds, walk_builds, walk_cover, walk_rows)
from hybridtree.device import kernels
from hybridtree.device.choice import get_runtime
from hybridtree.device.runtime import Runtime, _kernel_dir
from hybridtree.gravity import walk_kernels
from hybridtree.gravity.tree.device_sort import Tuning, fit_tuning, sort_defines
from tools.vendor_compile import TARGETS, compile_all, missing_tools, report
from tests.helpers import once_per_run

pytestmark = pytest.mark.vendor


@pytest.fixture(scope="module", autouse=True)
def _enumeration_once_a_run(tmp_path_factory):
    """The walk's enumeration (tools.kernel_builds: walk_rows, walk_cover, walk_builds;
    ~20 CPU s for the 8 device descriptions) made once a run for both pytest-xdist workers
    (tests.helpers.once_per_run): the compile test and the tests below went to both, and
    each worker made it all.  The tests check the same values, made by the same code."""
    kernel_builds.share_with(lambda name, make: once_per_run(tmp_path_factory, name, make))
    yield
    kernel_builds.share_with(None)

ROOT = Path(__file__).resolve().parents[2]
NO_CLANG = missing_tools()
needs_clang = pytest.mark.skipif(bool(NO_CLANG), reason=f"vendor compile check: {NO_CLANG}")
TARGET = {t.name: t for t in TARGETS}


def _included() -> set[str]:
    """Kernel files that other files include (not built on their own)."""
    return {line.split('"')[1] for p in _kernel_dir().glob("*.cl")
            for line in p.read_text().splitlines() if line.startswith("#include")}


def test_every_kernel_file_is_built():
    built = {b.source for b in all_builds()}
    files = {p.name for p in _kernel_dir().glob("*.cl")} - _included()
    assert files <= built, f"never enumerated: {files - built}"


def test_every_declared_file_exists_and_every_built_file_is_declared():
    files = {p.name for p in _kernel_dir().glob("*.cl")} - _included()
    assert set(kernels.FILES) == files


def test_every_build_the_code_asks_for_is_enumerated():
    """Run the launch code on a fresh runtime of this machine's device (its own program
    cache) and compare the programs it built with the registry's requests for the
    device's description: a launch with defines no option set declares fails here."""
    from hybridtree.device.reduce import Reducer
    from hybridtree.gravity.direct import direct_forces
    from hybridtree.gravity.periodic import Periodic
    from hybridtree.gravity.pm_compact import CompactMesh
    from hybridtree.gravity.tree.device_build import DeviceArrays, build_device_tree
    from hybridtree.gravity.walk import tree_forces, walk_active, walk_into
    from hybridtree.ics import plummer
    from hybridtree.state import DeviceState
    from hybridtree.integrate.timebins import DeviceBins
    from hybridtree.parallel.device_let import local_sink_groups, select_on_device
    from hybridtree.particles import Particles

    shared = get_runtime()
    if not shared.has_fp64:
        pytest.skip("the device-resident paths need cl_khr_fp64")
    ctx = cl.Context([shared.device])
    rt = Runtime(shared.info, ctx, cl.CommandQueue(ctx))
    n = 500
    pos, vel, mass = plummer(n, seed=5)
    for split, eps in ((True, 0.01), (False, 0.0)):
        direct_forces(rt, pos, mass, pos, eps, True, split=split)
    state = DeviceState(rt, Particles(pos, vel, mass, np.arange(n, dtype=np.uint64)),
                        ("full",))
    for multipole in ("monopole", "quadrupole"):
        tree = build_device_tree(rt, DeviceArrays(state.pos, state.mass, n), None,
                                 multipole=multipole)
        tree_forces(rt, tree, 0.01)
        walk_into(rt, tree, 0.01, state.acc["full"], state.pot)
        select_on_device(tree, state.pos, state.mass, np.array([[[2.0] * 3, [3.0] * 3]]), 0.2)
        local_sink_groups(tree, n // 2, 64)
    tree_forces(rt, build_device_tree(rt, pos, mass), 0.01, sinks=pos[:50])
    bins = DeviceBins(state)
    bins.assign(0, 5, 0.01, 0.0)
    walk_active(rt, tree, 0.01, state.acc["full"], state.pot, bins.bins, 1)
    bins.kick(0, 0.001, 0.0)
    bins.counts()
    state.kick("full", 0.001)
    state.drift(0.001)
    state.download((0, None))
    red = Reducer(rt)
    red.moments(n, state.pos, state.vel, state.mass, state.pot)
    red.lagrangian_radii(n, state.pos, state.mass, np.zeros(3))
    red.count_sum(n, rt.to_device(np.ones((n, 2), np.int32)))
    red.all_finite(n, (state.pos, 3 * n))
    CompactMesh(rt, Periodic(8.0, 32, order=2)).forces(pos, mass)    # the float32 mesh
    rt.queue.finish()

    def key(file, defines, fast_math):
        return file, tuple(sorted((str(k), str(v)) for k, v in defines.items())), fast_math

    declared = {key(r.file, dict(r.defines), r.fast_math) for r in kernels.requests(rt.info)}
    built = {key(*b) for b in rt.builds()}
    assert len({b[0] for b in built}) >= 9, built          # the paths did run
    assert built <= declared, sorted(built - declared)


def _held(rows) -> tuple[set, set]:
    """What rows hold, computed here rather than by tools.covering: every (axis, value)
    pair of two axes (the distinct pairs of two columns of the rows' indices), and per
    walk program every pair of define items."""
    index = np.array([row.index for row in rows]).reshape(len(rows), len(WALK_AXES))
    axes = set()
    for i in range(index.shape[1]):
        for j in range(i + 1, index.shape[1]):
            axes |= {((i, a), (j, b)) for a, b in np.unique(index[:, [i, j]], axis=0).tolist()}
    defines = {(file, x, y) for file, d in {b for row in rows for b in row.builds}
               for x in d for y in d if x <= y}
    return axes, defines


@pytest.mark.parametrize("name", list(PROFILES))
def test_the_walk_s_covering_array_holds_every_pair_of_the_full_product(name):
    """The compile check's walk builds (a strength-2 covering array, tools.covering): every
    pair of values of two axes that some accepted combination has (so every value of every
    axis too), and every define value and pair of define values of every walk program of
    the full product, occur in a covered build; far fewer programs than the product."""
    info = PROFILES[name]
    rows, chosen = walk_rows(info), walk_cover(info)
    want_axes, want_defines = _held(rows)
    got_axes, got_defines = _held(chosen)
    assert want_axes <= got_axes, sorted(want_axes - got_axes)[:5]
    assert want_defines <= got_defines, sorted(want_defines - got_defines)[:5]
    assert {p for r in rows for p in enumerate(r.index)} == \
        {p for r in chosen for p in enumerate(r.index)}              # every value
    programs = {b for r in rows for b in r.builds}
    assert len({b for r in chosen for b in r.builds}) * 10 < len(programs)
    assert [r.index for r in walk_cover(info)] == [r.index for r in chosen]   # deterministic


def test_the_pair_check_sees_a_missing_row():
    """The check above is live: without some row of the covering array a pair is lost."""
    info = PROFILES["nvidia-h100"]
    chosen = walk_cover(info)
    want = _held(walk_rows(info))
    lost = [i for i in range(len(chosen))
            if not all(w <= g for w, g in zip(want, _held(chosen[:i] + chosen[i + 1:])))]
    assert lost, "every row of the covering array is redundant"


def test_cover_of_three_binary_axes():
    """Greedy covering of 2 x 2 x 2: every pair in at most 5 rows, none refused."""
    rows = [(a, b, c) for a in (0, 1) for b in (0, 1) for c in (0, 1)]
    feats = [{(i, j, r[i], r[j]) for i in range(3) for j in range(i + 1, 3)} for r in rows]
    chosen = cover(feats)
    assert set().union(*(feats[i] for i in chosen)) == set().union(*feats)
    assert 4 <= len(chosen) <= 5 and chosen == sorted(set(chosen))


@pytest.mark.parametrize("name", ["nvidia-h100", "small-gpu", "pocl-cpu"])
def test_walk_rows_are_the_walk_s_option_sets(name):
    """tools.kernel_builds' row-by-row walk gives the programs of walk_option_sets, in
    order, and its other requests with the walk's are hybridtree's requests."""
    info = PROFILES[name]
    norm = [(f, tuple(sorted((str(k), str(v)) for k, v in (d or {}).items())))
            for f, d in walk_kernels.walk_option_sets(info)]
    assert [b for r in walk_rows(info) for b in r.builds] == norm
    full = {b.key for b in profile_builds(name, info, full=True)}
    assert full == {(r.file, r.defines, r.fast_math) for r in kernels.requests(info)}
    walk = {b.key for b in walk_builds(name, info)}
    requested = kernel_builds._requests(info, kernel_builds._axes_key(), False)
    others = {(r.file, r.defines, r.fast_math) for r in requested}
    assert others | walk == full and others.isdisjoint(walk)
    covered = {b.key for b in profile_builds(name, info)} - walk
    assert covered == {(r.file, r.defines, r.fast_math) for r in option_cover(requested)}


def _define_pairs(programs) -> set:
    """Every file, define value and pair of define values (a define a program lacks: the
    value None) of ``programs`` (requests of one origin), counted here by sets."""
    names = {}
    for r in programs:
        names.setdefault(r.file, set()).update(k for k, _ in r.defines)
    out = set()
    for r in programs:
        d = dict(r.defines)
        items = [(k, d.get(k)) for k in sorted(names[r.file])]
        out |= {(r.file,)} | {(r.file, x) for x in items}
        out |= {(r.file, x, y) for i, x in enumerate(items) for y in items[i + 1:]}
    return out


@pytest.mark.parametrize("name", list(PROFILES))
def test_every_option_set_s_covering_array_holds_every_pair_of_its_programs(name):
    """The compile check's builds of the option sets other than the walk's (a strength-2
    covering array of each, tools.kernel_builds.option_cover): every file, every define
    value ("absent" included) and every pair of define values of two names that the
    option set's programs of a file hold, occur in a covered build; the direct sum's 30
    programs (split, softenings, zero guard, three work-groups) in 6 to 9."""
    requested = kernel_builds._requests(PROFILES[name], kernel_builds._axes_key(), False)
    chosen = {b.key for b in profile_builds(name, PROFILES[name])}
    origins = {}
    for r in requested:
        origins.setdefault(r.origin, []).append(r)
    for origin, programs in origins.items():
        mine = [r for r in programs if (r.file, r.defines, r.fast_math) in chosen]
        lost = _define_pairs(programs) - _define_pairs(mine)
        assert not lost, (origin, sorted(lost, key=repr)[:5])
    direct = [r for r in requested if r.file == "direct.cl"]
    kept = [r for r in direct if (r.file, r.defines, r.fast_math) in chosen]
    assert len(direct) == 30 and 6 <= len(kept) <= 9, (len(direct), len(kept))
    # live: without any one kept direct program some value or pair is lost (6 rows: WG
    # with SPLIT needs all six)
    assert all(_define_pairs(kept[:i] + kept[i + 1:]) != _define_pairs(direct)
               for i in range(len(kept)))


def test_each_walk_option_reaches_the_kernel_defines():
    """Every value of every axis of WALK_AXES changes some walk build: an option that the
    walk stopped passing on would leave its axis without effect.  The builds with an axis
    held at one value are the accepted rows of that value (walk_rows: the walk's own
    calls, row by row, checked against walk_option_sets above), not a new enumeration."""
    devices = [walk_rows(PROFILES["nvidia-h100"]), walk_rows(PROFILES["pocl-cpu"])]
    everything = {b for rows in devices for r in rows for b in r.builds}
    for axis, (name, values) in enumerate(WALK_AXES.items()):
        for value in range(len(values)) if len(values) > 1 else ():
            keys = {b for rows in devices for r in rows if r.index[axis] == value
                    for b in r.builds}
            assert keys and keys != everything, (name, values[value])


def test_the_walk_axes_name_the_walk_s_parameters(monkeypatch):
    monkeypatch.setattr(walk_kernels, "WALK_AXES", {**WALK_AXES, "no_such_option": (1,)})
    with pytest.raises(KeyError, match="no_such_option"):
        walk_builds("gpu", PROFILES["nvidia-h100"])


def test_devices_without_double_precision_ask_for_no_double_build():
    arc = profile_builds("intel-arc-a770", PROFILES["intel-arc-a770"], full=True)
    assert arc and not any(b.fp64 for b in arc)
    assert {"prepare.cl", "reduce.cl", "state.cl", "let.cl"} & {b.source for b in arc} == set()
    h100 = profile_builds("nvidia-h100", PROFILES["nvidia-h100"], full=True)
    assert {"prepare.cl", "reduce.cl", "let.cl"} <= {b.source for b in h100 if b.fp64}


def test_amd_devices_ask_for_work_groups_amd_allows():
    for b in profile_builds("amd-mi250", PROFILES["amd-mi250"], full=True):
        wg = dict(b.defines).get("WG")
        if wg is not None and b.source != "treewalk.cl":
            assert int(wg) <= 256, b.describe()


@pytest.mark.slow
@needs_clang
def test_every_build_compiles_for_amd_and_intel():
    """Every build of every device profile compiles for its targets, the walk's option
    axes and every other option set as their strength-2 covering arrays (every value and
    pair of values, every define value and pair of define values: checked above): 513
    compiles (835 with the other option sets whole; the walk's full product was 3 216),
    the check of every other vendor's compiler in one test.  A define path broken for one
    pair of values (LOAD_EPS reading SPLIT's `sl`: PER_EPS = 1 with SPLIT = 0) fails it.
    ``python -m tools.vendor_compile --full`` compiles the whole product."""
    outcomes = compile_all()
    summary = report(outcomes)
    errors = [o for o in outcomes if o.errors]
    assert not errors, summary
    for name in ("gfx90a", "gfx1030", "spir64", "spir64-nofp64"):
        mine = [o for o in outcomes if o.target.name == name]
        assert len(mine) >= 20, f"{name}: only {len(mine)} programs compiled\n{summary}"
    amd = {b.source for o in outcomes if o.target.name == "gfx90a" for b in o.builds}
    assert {"walklist.cl", "direct.cl", "sort.cl", "treebuild.cl", "reduce.cl"} <= amd
    found = sorted({w for o in outcomes for w in o.warnings})
    if found:                              # listed in pytest's warnings summary
        warnings.warn(UserWarning("vendor compile warnings:\n" + "\n".join(found)))
    print(summary)


@needs_clang
def test_a_compile_error_fails_the_check():
    broken = Build.make("sort.cl", {"RADIX_BITS": 9}, False, False, "this test")   # #error
    too_big = Build.make("sort.cl", sort_defines(Tuning(256, 64, 8, 8)), False, False,
                         "this test")     # 128 KiB of local memory: over AMD's 64 KiB
    fitted = Build.make("sort.cl", sort_defines(fit_tuning(Tuning(256, 64, 8, 8),
                                                           PROFILES["amd-mi250"])),
                        False, False, "this test")
    out = {o.builds[0].describe(): o for o in
           compile_all([TARGET["gfx90a"]], builds=[broken, too_big, fitted])}
    assert "RADIX_BITS must be 1..8" in out[broken.describe()].errors
    assert "local memory" in out[too_big.describe()].errors
    assert out[fitted.describe()].errors == ""
