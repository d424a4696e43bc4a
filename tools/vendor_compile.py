"""Compile every kernel build (:mod:`tools.kernel_builds`) for AMD and Intel targets.

No AMD or Intel device is needed: clang (Debian's ``clang-14``; a newer one for the
newer chips) compiles OpenCL C for AMD GPUs (``-target amdgcn-amd-amdhsa -mcpu=gfxNNN``,
the compiler ROCm's OpenCL runtime is built on) and to SPIR (``-target spir64``: clang's
front end for the portable target, as Intel's own clang-based compiler sees the
source); ``llvm-spirv-NN`` turns that into SPIR-V, the form Intel's runtimes also take
(clCreateProgramWithIL), where installed.  An error fails the check; warnings are collected.  ``-nogpulib`` leaves the
built-in functions (rsqrt, ...) undefined on AMD: compilation and code generation are
checked, resource numbers (scratch) are not meaningful.

The walk's option axes are compiled as a strength-2 covering array
(:func:`tools.kernel_builds.walk_cover`: every value and every pair of values of its
axes, every define value and pair of define values, on every target), and the other
option sets' builds as theirs (:func:`tools.kernel_builds.option_cover`); ``--full``
compiles their whole product (a check before a release).

``python -m tools.vendor_compile [--full] [--count]`` prints the result (``--count``: the
number of compiles, without compiling them; CI:
tests/tools/test_vendor_compile.py).
"""

from __future__ import annotations

import hashlib
import os
import re
import shutil
import subprocess
import sys
import tempfile
from collections.abc import Iterable
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field
from functools import lru_cache
from pathlib import Path

from tools.kernel_builds import Build, all_builds, declared_files
from hybridtree.device.runtime import kernel_source

__all__ = ["TARGETS", "Target", "compile_all", "compilers", "missing_tools"]


@dataclass(frozen=True)
class Target:
    """One compile target: ``family`` (the devices it stands for), clang's triple and
    processor, whether the devices have double precision, whether the result is turned
    into SPIR-V."""

    name: str
    family: str
    triple: str
    cpu: str = ""
    fp64: bool = True
    spirv: bool = False
    optional: bool = False      # only where an installed clang knows the processor
    profiles: tuple[str, ...] = ()      # whose builds (kernel_builds.PROFILES); () all

    @property
    def opt(self) -> str:
        """Optimisation level: ROCm's -O3 for AMD; SPIR unoptimised, as Intel's runtimes
        optimise it themselves (and llvm-spirv cannot translate every construct of
        optimised IR, e.g. ``freeze`` or 2-bit integers)."""
        return "-O3" if self.cpu else "-O0"

    def flags(self) -> list[str]:
        flags = ["-target", self.triple]
        if self.cpu:
            flags += [f"-mcpu={self.cpu}", "-nogpulib"]
        else:                   # SPIR is LLVM bitcode
            flags += ["-emit-llvm"]
        if not self.fp64:       # as a device without cl_khr_fp64 compiles it
            flags += ["-Xclang", "-cl-ext=-cl_khr_fp64"]
        return flags


#: The targets: AMD CDNA (MI200, MI300) and RDNA (RX 6000, RX 7000) with the builds AMD
#: devices ask for; Intel (SPIR-V; and SPIR without double precision, as Intel's Arc GPUs
#: lack it) with the builds of Intel devices; SPIR with every build of every device (the
#: portable form, with no local-memory limit: a check of the OpenCL C itself).  gfx942
#: and gfx1100 need a newer clang than 14 (Debian: clang-19).
TARGETS = (
    Target("gfx90a", "AMD CDNA2 (Instinct MI200)", "amdgcn-amd-amdhsa", "gfx90a",
           profiles=("amd-mi250",)),
    Target("gfx942", "AMD CDNA3 (Instinct MI300)", "amdgcn-amd-amdhsa", "gfx942",
           optional=True, profiles=("amd-mi250",)),
    Target("gfx1030", "AMD RDNA2 (Radeon RX 6000)", "amdgcn-amd-amdhsa", "gfx1030",
           profiles=("amd-rx6800",)),
    Target("gfx1100", "AMD RDNA3 (Radeon RX 7000)", "amdgcn-amd-amdhsa", "gfx1100",
           optional=True, profiles=("amd-rx6800",)),
    Target("spir64", "every device (SPIR, the portable target)", "spir64"),
    Target("spirv64", "Intel GPUs and CPUs (SPIR-V)", "spir64", spirv=True, optional=True,
           profiles=("intel-max-1550", "intel-cpu", "intel-arc-a770")),
    Target("spir64-nofp64", "Intel Arc / Xe, devices without double precision (SPIR)",
           "spir64", fp64=False, profiles=("intel-arc-a770", "small-gpu")),
)

_BASE = ["-x", "cl", "-cl-std=CL1.2", "-Xclang", "-finclude-default-header"]


@lru_cache(maxsize=None)
def compilers() -> tuple[tuple[int, str], ...]:
    """Installed clang executables as (major version, path), newest first: ``clang-NN``
    on the PATH, and plain ``clang``."""
    found: dict[str, int] = {}
    names = [f"clang-{v}" for v in range(30, 10, -1)] + ["clang"]
    for name in names:
        path = shutil.which(name)
        if not path or os.path.realpath(path) in found:
            continue
        out = subprocess.run([path, "--version"], capture_output=True, text=True).stdout
        m = re.search(r"clang version (\d+)", out)
        if m:
            found[os.path.realpath(path)] = int(m.group(1))
    return tuple(sorted(((v, p) for p, v in found.items()), reverse=True))


@lru_cache(maxsize=None)
def _knows(clang: str, target: Target) -> bool:
    """Whether ``clang`` compiles an empty kernel for ``target`` (knows its processor)."""
    with tempfile.TemporaryDirectory() as tmp:
        src = Path(tmp) / "k.cl"
        src.write_text("__kernel void k(__global int *x) { x[0] = 1; }\n")
        r = subprocess.run([clang, *_BASE, *target.flags(), "-c", "-o", os.devnull,
                            str(src)], capture_output=True, text=True)
    return r.returncode == 0


def _label(clang: str) -> str:
    """clang-NN of an installed compiler's path."""
    return next((f"clang-{v}" for v, p in compilers() if p == clang), Path(clang).name)


def _spirv_tool(version: int) -> str | None:
    return shutil.which(f"llvm-spirv-{version}")


def tool_for(target: Target) -> tuple[str, str | None] | None:
    """(clang, llvm-spirv or None) that compiles for ``target``: the newest clang that
    knows its processor (for SPIR-V: the newest with an ``llvm-spirv`` of its version);
    None when there is none."""
    for version, clang in compilers():
        if target.spirv:
            tool = _spirv_tool(version)
            if tool and _knows(clang, target):
                return clang, tool
        elif _knows(clang, target):
            return clang, None
    return None


def missing_tools() -> str:
    """Why the compile check cannot run ("" when it can): no clang at all, or none that
    knows a required (not optional) target."""
    if not compilers():
        return ("no clang installed (Debian: apt-get install clang-14 llvm-spirv-14; "
                "clang-19 adds gfx942 and gfx1100)")
    lacking = [t.name for t in TARGETS if not t.optional and tool_for(t) is None]
    if lacking:
        return f"no installed clang compiles for {', '.join(lacking)}"
    return ""


@dataclass
class Outcome:
    """What compiling one distinct program for one target gave."""

    target: Target
    builds: list[Build]
    compiler: str
    errors: str = ""
    warnings: list[str] = field(default_factory=list)


def _preprocessed(clang: str, build: Build, fp64: bool, tmp: Path) -> bytes:
    """The build's source after the preprocessor, for telling identical programs apart
    (defines that a file never reads give the same program)."""
    r = subprocess.run([clang, "-E", "-P", "-x", "cl", "-cl-std=CL1.2", *build.options(),
                        "-target", "spir64"] + ([] if fp64 else
                                                ["-Xclang", "-cl-ext=-cl_khr_fp64"])
                       + [str(tmp / build.source)], capture_output=True)
    return hashlib.sha256(r.stdout + r.stderr + bytes([build.fast_math])).digest()


def _compile(clang: str, spirv: str | None, build: Build, target: Target, tmp: Path,
             tag: str) -> tuple[str, list[str]]:
    """(errors, warning lines) of one compile."""
    out = tmp / f"{tag}.{'o' if target.cpu else 'bc'}"
    cmd = [clang, *_BASE, *target.flags(), target.opt, "-c", *build.options(), "-o",
           str(out), str(tmp / build.source)]
    r = subprocess.run(cmd, capture_output=True, text=True)
    text = r.stderr.replace(f"{tmp}{os.sep}", "cl/")        # messages name cl/<file>
    if r.returncode == 0 and spirv:
        s = subprocess.run([spirv, str(out), "-o", str(tmp / f"{tag}.spv")],
                           capture_output=True, text=True)
        if s.returncode != 0:
            return f"llvm-spirv failed:\n{s.stdout}{s.stderr}", []
    warnings = [line for line in text.splitlines() if "warning:" in line]
    return (text if r.returncode != 0 else ""), warnings


def compile_all(targets: Iterable[Target] = TARGETS, jobs: int | None = None,
                builds: list[Build] | None = None, full: bool = False,
                dry: bool = False) -> list[Outcome]:
    """Compile, for every target an installed clang can compile for, every distinct
    program of its devices' builds (:func:`tools.kernel_builds.all_builds`; or
    ``builds`` for every target); builds that need double precision are left out on
    targets without it (the code never asks for them there).  ``jobs``: parallel
    compiles (default: the CPU count); ``full``: the walk's whole product of options
    rather than its covering array; ``dry``: the outcomes without compiling (one per
    compile it would run: the count of compiles)."""
    jobs = jobs or os.cpu_count() or 1
    outcomes: list[Outcome] = []
    with tempfile.TemporaryDirectory() as name, ThreadPoolExecutor(jobs) as pool:
        tmp = Path(name)
        for source in declared_files():       # includes are already in the text
            (tmp / source).write_text(kernel_source(source))
        plans = []
        for target in targets:
            tool = tool_for(target)
            if tool is not None:
                mine = (builds if builds is not None
                        else all_builds(target.profiles or None, full=full))
                plans.append((target, tool, [b for b in mine if target.fp64 or not b.fp64]))
        todo = {(b.key, t.fp64): b for t, _, builds in plans for b in builds}
        clang = compilers()[0][1]
        digests = dict(zip(todo, pool.map(lambda kf: _preprocessed(clang, todo[kf], kf[1],
                                                                   tmp), todo)))
        work = []
        for target, (clang, spirv), mine in plans:
            groups: dict[bytes, list[Build]] = {}
            for b in mine:
                groups.setdefault(digests[b.key, target.fp64], []).append(b)
            for i, group in enumerate(groups.values()):
                work.append((Outcome(target, group, _label(clang)), clang, spirv,
                             f"{target.name}_{i}"))
        if dry:
            return [w[0] for w in work]
        results = pool.map(lambda w: _compile(w[1], w[2], w[0].builds[0], w[0].target,
                                              tmp, w[3]), work)
        for (outcome, *_), (errors, warnings) in zip(work, results):
            outcome.errors, outcome.warnings = errors, warnings
            outcomes.append(outcome)
    return outcomes


def report(outcomes: list[Outcome]) -> str:
    """A summary: per target the compiler and the programs compiled, then every error and
    every distinct warning with the builds it came from."""
    lines = []
    for t in TARGETS:
        mine = [o for o in outcomes if o.target == t]
        if not mine:
            lines.append(f"{t.name:14s} {t.family}: not compiled (no installed clang knows it)")
            continue
        bad = sum(bool(o.errors) for o in mine)
        lines.append(f"{t.name:14s} {t.family}: {len(mine)} programs "
                     f"({sum(len(o.builds) for o in mine)} builds) with {mine[0].compiler}, "
                     f"{bad} failed, {sum(len(o.warnings) for o in mine)} warnings")
    for o in outcomes:
        if o.errors:
            lines.append(f"ERROR {o.target.name} {o.builds[0].describe()}:\n{o.errors}")
    seen: dict[str, list[str]] = {}
    for o in outcomes:
        for w in o.warnings:
            seen.setdefault(w, []).append(
                f"{o.target.name} {o.builds[0].describe()}")
    for w, where in seen.items():
        lines.append(f"warning ({len(where)}x): {w}; first in {where[0]}")
    return "\n".join(lines)


def main(argv: list[str] | None = None) -> int:
    why = missing_tools()
    if why:
        print(f"vendor compile check not run: {why}")
        return 2
    argv = sys.argv[1:] if argv is None else argv
    outcomes = compile_all(full="--full" in argv, dry="--count" in argv)
    if "--count" in argv:
        walk = "full product" if "--full" in argv else "covering array"
        print(f"{len(outcomes)} compiles (the option sets: {walk})")
        return 0
    print(report(outcomes))
    return 1 if any(o.errors for o in outcomes) else 0


if __name__ == "__main__":
    raise SystemExit(main())
