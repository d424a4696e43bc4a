"""Issue 34: a device is chosen only after it built the probe kernel, a device that fails
is passed over (or, named by the user, is one line and exit status 2), the probe picks
how each device computes 1/sqrt, names users type select the driver they mean, and the
OpenCL drivers pip installs are registered with the loader."""

import os
import subprocess
import sys
from dataclasses import replace
from pathlib import Path

import numpy as np
import pytest

from hybridtree import cli
from hybridtree.device import choice as opencl
from hybridtree.device import probe
from hybridtree.device import drivers
from hybridtree.device.choice import _best, _match, list_devices, register_pip_drivers
from hybridtree.device.runtime import DeviceError, DeviceInfo
from hybridtree.device.drivers import _vendor
from hybridtree.device.probe import RSQRT_TOLERANCE, Probe, reason_line

from tests.helpers import one_error_line

ROOT = Path(__file__).resolve().parents[2]
BROKEN = Probe(False, "error: unknown target CPU 'generic'")


def _dev(pi: int, platform: str, name: str, kind: str = "cpu", vendor: str = "other",
         cu: int = 2) -> DeviceInfo:
    return DeviceInfo(pi, 0, platform, name, kind, cu, "OpenCL 3.0", vendor=vendor)


POCL30 = _dev(0, "Portable Computing Language", "pthread-AMD EPYC", vendor="pocl")
INTEL = _dev(1, "Intel(R) OpenCL", "AMD EPYC", vendor="intel")
NVIDIA = _dev(2, "NVIDIA CUDA", "NVIDIA H100", kind="gpu", vendor="nvidia")


def test_the_probe_measures_every_way_of_rsqrt_on_this_device(runtime, tmp_path, monkeypatch):
    """On the session's device: the probe builds and runs, measures the three ways of
    cl/rsqrt.cl against float64, and takes the first that reaches the tolerance."""
    monkeypatch.setenv("HYBRIDTREE_CACHE_DIR", str(tmp_path))
    import pyopencl as cl
    dev = cl.get_platforms()[runtime.info.platform_index].get_devices()[runtime.info.device_index]
    found = probe.probe(runtime.info, dev)
    assert found.ok and found.reason == "" and found.seconds > 0
    assert len(found.rsqrt_errors) == 3
    # the Newton step and the division are within a few ulp on every implementation
    assert max(found.rsqrt_errors[1:]) < 4 * 2.0**-23
    good = [k for k, e in enumerate(found.rsqrt_errors) if e <= RSQRT_TOLERANCE]
    assert found.rsqrt_mode == good[0]
    assert runtime.info.rsqrt_mode == found.rsqrt_mode      # the session's runtime uses it
    # cached: the second answer comes without a build
    again = probe.probe(runtime.info, dev, measure=lambda *a: pytest.fail("probed again"))
    assert again.rsqrt_mode == found.rsqrt_mode and again.seconds == 0.0


def test_a_failure_that_is_not_the_compiler_is_not_cached(runtime, tmp_path, monkeypatch):
    monkeypatch.setenv("HYBRIDTREE_CACHE_DIR", str(tmp_path))
    import pyopencl as cl
    dev = cl.get_platforms()[runtime.info.platform_index].get_devices()[runtime.info.device_index]
    assert not probe.probe(runtime.info, dev,
                           measure=lambda *a: (Probe(False, "out of resources"), False)).ok
    assert not probe.cache_path().exists()
    assert probe.probe(runtime.info, dev, measure=lambda *a: (BROKEN, True)) == BROKEN
    assert "unknown target CPU" in probe.cache_path().read_text()


def test_rsqrt_modes_reach_the_kernels():
    """RSQRT_MODE is a define of the force kernels only where the probe chose other than
    rsqrt, so devices where rsqrt is exact build the same programs as before."""
    from hybridtree.gravity.direct import direct_defines
    assert "RSQRT_MODE" not in direct_defines(INTEL, 0.01)
    assert direct_defines(replace(INTEL, rsqrt_mode=1), 0.01)["RSQRT_MODE"] == 1
    assert replace(INTEL, rsqrt_mode=2) == INTEL           # not part of what the device is


def test_the_automatic_choice_passes_over_a_device_that_cannot_build():
    check = {POCL30: BROKEN, INTEL: Probe(True, rsqrt_mode=1)}.get
    chosen = _best([POCL30, INTEL], check=check)
    assert chosen == INTEL and chosen.rsqrt_mode == 1
    with pytest.raises(DeviceError, match="no OpenCL device that builds kernels.*unknown "
                                          "target CPU 'generic'.*intel-opencl-rt|Intel"):
        _best([POCL30], check=check)


def test_a_named_device_that_cannot_build_is_an_error_not_passed_over():
    check = {POCL30: BROKEN, INTEL: Probe(True)}.get
    with pytest.raises(DeviceError, match=r"'pocl' cannot build kernels: .*unknown target CPU"):
        _match("pocl", [POCL30, INTEL], check=check)
    assert _match("cpu", [POCL30, INTEL], check=check) == INTEL    # a kind: passed over


def test_names_users_type_select_the_driver_they_mean():
    # Intel's CPU runtime on an AMD CPU is Intel's, PoCL is PoCL whatever the CPU
    assert _vendor("Intel(R) OpenCL", "AMD EPYC", "Intel(R) Corporation") == "intel"
    assert _vendor("Portable Computing Language", "pthread-AMD EPYC", "AuthenticAMD") == "pocl"
    assert _vendor("AMD Accelerated Parallel Processing", "gfx90a") == "amd"
    assert _vendor("rusticl", "AMD Radeon RX 6800", "AMD") == "amd"
    devices = [POCL30, INTEL, NVIDIA]
    assert _match("pocl", devices) == POCL30          # the platform is not called "pocl"
    assert _match("intel", devices) == INTEL
    assert _match("nvidia", devices) == NVIDIA
    with pytest.raises(DeviceError, match="no device of 'amd'"):
        _match("amd", devices)                        # not the AMD CPU under Intel's driver
    assert _match("EPYC", [POCL30, INTEL]) in (POCL30, INTEL)   # other text: a substring


def test_cpu_drivers_rank_as_measured():
    """The ranking docs/devices.md states, for CPU devices of equal compute units: a PoCL
    of 3.1 or newer, then Intel's CPU runtime, then PyPI's PoCL 3.0."""
    pocl31 = replace(POCL30, platform_index=3, driver="3.1+debian")
    pocl30 = replace(POCL30, driver="3.0-rc2")
    assert _best([pocl30, INTEL]) == INTEL
    assert _best([pocl30, INTEL, pocl31]) == pocl31
    assert _best([replace(pocl30, compute_units=4), INTEL]).vendor == "pocl"
    assert _best([INTEL, pocl30, NVIDIA]) == NVIDIA


def test_reason_line_takes_the_compilers_error():
    text = ("building probe.cl for 0:0 PoCL failed with options -cl-std=CL1.2:\n"
            "clBuildProgram failed: BUILD_PROGRAM_FAILURE - clBuildProgram failed\n\n"
            "Build on <pyopencl.Device 'pthread-AMD EPYC'>:\n\n"
            "error: unknown target CPU 'generic'\nnote: valid target CPU values are: nocona,"
            " core2, penryn\n\n(options: -cl-std=CL1.2)")
    assert reason_line(RuntimeError(text)) == "error: unknown target CPU 'generic'"
    assert reason_line(RuntimeError("clCreateContext failed: OUT_OF_HOST_MEMORY")) == \
        "clCreateContext failed: OUT_OF_HOST_MEMORY"


def _pocl_platform() -> bool:
    return any(d.vendor == "pocl" for d in list_devices())


BREAK_POCL = {"POCL_EXTRA_BUILD_FLAGS": "-include /nonexistent/broken.h"}


@pytest.mark.skipif(not _pocl_platform(), reason="needs a PoCL device (the cpu extra)")
def test_a_real_device_that_fails_its_builds(tmp_path):
    """PoCL told to compile with an option it refuses fails every build, as PyPI's PoCL
    does on CPUs newer than its LLVM: `hybridtree devices` names it with the reason, and a
    run that names it ends with one line and exit status 2, leaving no output folder."""
    env = {**os.environ, **BREAK_POCL, "HYBRIDTREE_CACHE_DIR": str(tmp_path / "cache")}
    env.pop("HYBRIDTREE_DEVICE", None)
    env.pop("PYOPENCL_CTX", None)
    ls = subprocess.run([sys.executable, "-m", "hybridtree", "devices"], capture_output=True,
                        text=True, env=env, cwd=tmp_path, timeout=300)
    assert ls.returncode == 0, ls.stderr
    pocl = [ln for ln in ls.stdout.splitlines() if "Portable Computing Language" in ln]
    assert pocl and all(not ln.startswith("*") for ln in pocl)
    assert "cannot build kernels: Invalid build option: -include" in ls.stdout
    out = tmp_path / "out"
    run = subprocess.run([sys.executable, "-m", "hybridtree", "run",
                          str(ROOT / "configs" / "plummer_small.toml"), "--device", "pocl",
                          "--set", f"output.dir={out}"], capture_output=True, text=True,
                         env=env, cwd=tmp_path, timeout=300)
    assert run.returncode == 2
    assert run.stderr.count("\n") == 1 and "Traceback" not in run.stderr, run.stderr
    assert "'pocl' cannot build kernels" in run.stderr
    assert "Invalid build option" in run.stderr
    assert not out.exists()


def test_a_named_failing_device_ends_the_run_with_one_line(monkeypatch, capsys, tmp_path):
    """A stand-in at the probe: the command line says why in one line, exit status 2."""
    monkeypatch.setattr(opencl, "probe_device", lambda d: BROKEN)
    monkeypatch.setattr(opencl.PROCESS_DEVICES, "chosen", {})
    monkeypatch.chdir(tmp_path)
    first = list_devices()[0]
    rc = cli.main(["run", str(ROOT / "configs" / "plummer_small.toml"), "--device",
                   f"{first.platform_index}:{first.device_index}"])
    assert rc == 2
    msg = one_error_line(capsys, "cannot build kernels", "unknown target CPU 'generic'")
    assert "hybridtree devices" in msg or "apt-get" in msg


def test_pip_drivers_are_registered_beside_the_systems(tmp_path, monkeypatch):
    lib = tmp_path / "env" / "lib" / "libintelocl.so"
    lib.parent.mkdir(parents=True)
    lib.write_bytes(b"")
    system = tmp_path / "vendors"
    system.mkdir()
    (system / "nvidia.icd").write_text("libnvidia-opencl.so.1\n")
    monkeypatch.setenv("OPENCL_VENDOR_PATH", str(system))
    monkeypatch.setenv("HYBRIDTREE_CACHE_DIR", str(tmp_path / "cache"))
    monkeypatch.delenv("OCL_ICD_VENDORS", raising=False)
    folder = register_pip_drivers([lib])
    assert os.environ["OCL_ICD_VENDORS"] == str(folder)
    files = {p.name: p.read_text() for p in folder.iterdir()}
    assert files == {"nvidia.icd": "libnvidia-opencl.so.1\n",
                     "hybridtree-libintelocl.icd": f"{lib}\n"}
    # a second process finds the same folder; a user's own OCL_ICD_VENDORS is left alone
    monkeypatch.delenv("OCL_ICD_VENDORS")
    assert register_pip_drivers([lib]) == folder
    monkeypatch.setenv("OCL_ICD_VENDORS", "/my/own.icd")
    assert register_pip_drivers([lib]) is None and os.environ["OCL_ICD_VENDORS"] == "/my/own.icd"
    # a system that registers such a driver itself gets no second copy
    monkeypatch.delenv("OCL_ICD_VENDORS")
    (system / "intel.icd").write_text("/opt/intel/lib/libintelocl.so\n")
    assert register_pip_drivers([lib]) is None


@pytest.mark.skipif(not drivers._pip_driver_libraries(),
                    reason="Intel's CPU runtime is not installed (pip install intel-opencl-rt)")
def test_intels_runtime_from_pip_is_seen_and_works(tmp_path):
    """In a fresh process (no OCL_ICD_VENDORS) the pip-installed Intel runtime is a
    platform, and the forces it computes match float64 (its rsqrt needs the probe)."""
    code = ("import numpy as np\n"
            "from hybridtree.gravity import accelerations, direct_reference\n"
            "from hybridtree.ics import plummer\n"
            "pos, _, m = plummer(2000, seed=5)\n"
            "ref, _ = direct_reference(pos, m, 0.01)\n"
            "f = accelerations(pos, m, 0.01, method='direct', device='intel')\n"
            "e = np.linalg.norm(f.acc - ref, axis=1) / np.linalg.norm(ref, axis=1)\n"
            "print(np.median(e))\n")
    env = {k: v for k, v in os.environ.items() if k != "OCL_ICD_VENDORS"}
    env["HYBRIDTREE_CACHE_DIR"] = str(tmp_path)
    proc = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                          env=env, cwd=ROOT, timeout=300)
    assert proc.returncode == 0, proc.stderr
    assert float(proc.stdout.split()[-1]) < 1e-6
