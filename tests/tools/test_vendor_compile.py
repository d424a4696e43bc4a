"""Compile checks for AMD and Intel (issue 22): every kernel build the code can request
(tools.kernel_builds) compiled by clang for AMD CDNA and RDNA GPUs and to SPIR /
SPIR-V for Intel's runtimes (tools.vendor_compile).  The enumeration's own tests run
everywhere; the compiles need Debian's clang-14 (clang-19 adds gfx942 and gfx1100,
llvm-spirv-14 adds SPIR-V) and are skipped without it, saying so."""

import warnings
from pathlib import Path

import pytest

from tools import kernel_builds
from tools.kernel_builds import (PROFILES, WALK_AXES, Build, all_builds, call_sites,
                                      profile_builds, walk_builds)
from hybridtree.device.runtime import _kernel_dir
from hybridtree.gravity.tree.device_sort import Tuning, fit_tuning, sort_defines
from tools.vendor_compile import TARGETS, compile_all, missing_tools, report

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


def test_every_call_site_with_defines_is_enumerated():
    """A file that some call builds with defines must have builds with defines from a
    device (else its combinations would be missed)."""
    with_defines = {b.source for b in all_builds() if b.defines and "on " in b.origin}
    for site in call_sites():
        if not site.plain:
            assert site.source in with_defines, f"{site.where} builds {site.source}"
    assert len(call_sites()) >= 8          # the scan does find the package's calls


def test_each_walk_option_reaches_the_kernel_defines(monkeypatch):
    """Every value of every axis of WALK_AXES changes some walk build: an option that the
    walk stopped passing on would leave its axis without effect."""
    devices = [("gpu", PROFILES["nvidia-h100"]), ("cpu", PROFILES["pocl-cpu"])]
    everything = {b.key for name, info in devices for b in walk_builds(name, info)}
    for axis, values in WALK_AXES.items():
        for value in values if len(values) > 1 else ():
            monkeypatch.setattr(kernel_builds, "WALK_AXES", {**WALK_AXES, axis: (value,)})
            keys = {b.key for name, info in devices for b in walk_builds(name, info)}
            assert keys and keys != everything, (axis, value)


def test_the_walk_axes_name_the_walk_s_parameters(monkeypatch):
    monkeypatch.setattr(kernel_builds, "WALK_AXES", {**WALK_AXES, "no_such_option": (1,)})
    with pytest.raises(KeyError, match="no_such_option"):
        walk_builds("gpu", PROFILES["nvidia-h100"])


def test_devices_without_double_precision_ask_for_no_double_build():
    arc = profile_builds("intel-arc-a770", PROFILES["intel-arc-a770"])
    assert arc and not any(b.fp64 for b in arc)
    assert {"prepare.cl", "reduce.cl", "state.cl", "let.cl"} & {b.source for b in arc} == set()
    h100 = profile_builds("nvidia-h100", PROFILES["nvidia-h100"])
    assert {"prepare.cl", "reduce.cl", "let.cl"} <= {b.source for b in h100 if b.fp64}


def test_amd_devices_ask_for_work_groups_amd_allows():
    for b in profile_builds("amd-mi250", PROFILES["amd-mi250"]):
        wg = dict(b.defines).get("WG")
        if wg is not None and b.source != "treewalk.cl":
            assert int(wg) <= 256, b.describe()


@needs_clang
def test_every_build_compiles_for_amd_and_intel():
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
