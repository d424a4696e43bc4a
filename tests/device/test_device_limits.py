"""No vendor assumptions (issue 22): the device choice never takes a simulator or a device
too small for the run, and every work-group size and tuning fits what the device reports.
Devices are described by hand (DeviceInfo), and one real device is made to report small
limits (PoCL's POCL_MAX_WORK_GROUP_SIZE)."""

import os
import subprocess
import sys
from dataclasses import replace
from pathlib import Path

import pytest

from hybridtree.device import choice as opencl
from hybridtree.gravity.direct import direct_defines
from hybridtree.analysis.info import device_listing
from tools.kernel_builds import PROFILES
from hybridtree.device.choice import ProcessDevices, _best, _match, choose_device, memory_needed
from hybridtree.device.runtime import DeviceError, DeviceInfo
from hybridtree.device.probe import Probe
from hybridtree.device.reduce import reduce_work_group
from hybridtree.gravity.tree.device_build import extent_work_group
from hybridtree.gravity.tree.device_sort import TUNING, Tuning, fit_tuning, local_bytes
from hybridtree.gravity.tuning import TUNING as WALK_TUNING

ROOT = Path(__file__).resolve().parents[2]
GIB = 2**30


def _dev(pi: int, name: str, kind: str = "gpu", mem: float = 8, **kw) -> DeviceInfo:
    return DeviceInfo(pi, 0, f"platform {pi}", name, kind, 8, "OpenCL 1.2",
                      global_mem_size=int(mem * GIB), **kw)


OCLGRIND = _dev(0, "Oclgrind Simulator", simulator=True, vendor="oclgrind")
SMALL_GPU = _dev(1, "small GPU", mem=0.5)
BIG_GPU = _dev(2, "big GPU", mem=80)
CPU = _dev(3, "CPU", kind="cpu", mem=64)


def test_the_automatic_choice_never_takes_a_simulator():
    assert _best([OCLGRIND, CPU]) == CPU
    assert _best([OCLGRIND, SMALL_GPU, CPU]) == SMALL_GPU
    assert _match("gpu", [OCLGRIND, SMALL_GPU, CPU]) == SMALL_GPU     # a kind word too
    assert _match("oclgrind", [OCLGRIND, CPU]) == OCLGRIND            # a name: as asked
    assert _match("0:0", [OCLGRIND, CPU]) == OCLGRIND                 # an index: as asked
    with pytest.raises(DeviceError, match="a simulator"):
        _best([OCLGRIND])
    with pytest.raises(DeviceError, match="a simulator"):
        _match("gpu", [OCLGRIND, CPU])


def test_the_automatic_choice_skips_devices_too_small_for_the_run():
    need = memory_needed(10_000_000)                 # state on the device: 351 B/particle
    assert need == 10_000_000 * (255 + 96)
    assert _best([SMALL_GPU, BIG_GPU, CPU], need) == BIG_GPU
    assert _best([SMALL_GPU, CPU], need) == CPU      # no GPU holds it: the CPU does
    assert _best([SMALL_GPU, CPU]) == SMALL_GPU      # size unknown: GPU first, as before
    with pytest.raises(DeviceError, match="the run needs"):
        _best([SMALL_GPU, OCLGRIND], need)
    unknown = replace(SMALL_GPU, global_mem_size=0)  # a device that does not say: taken
    assert _best([unknown], need) == unknown


def test_the_automatic_choice_weighs_a_runs_plan_on_each_device():
    """A run's need is its memory plan, which depends on the device: a 2^30 Plummer run
    needs about 133 B a particle on an H200 (143 GB), which the flat 351 B/particle
    figure of memory_needed would have refused (issue 56)."""
    from hybridtree.config.settings import validate
    from hybridtree.run.size import device_need
    h200 = _dev(2, "NVIDIA H200", mem=143771 / 1024, vendor="nvidia", fp64=True,
                max_mem_alloc_size=35942 << 20)
    settings = validate({"ics": {"kind": "plummer", "n": 1 << 20}})
    n = 1 << 30
    need = device_need(settings, n, 1)
    assert memory_needed(n) > h200.global_mem_size > need(h200) > 100 * n
    assert _best([SMALL_GPU, h200], need) == h200
    with pytest.raises(DeviceError, match="the run needs"):
        _best([SMALL_GPU, h200], device_need(settings, 2 * n, 1))


def test_choose_device_passes_the_memory_need_on(monkeypatch):
    monkeypatch.setattr(opencl, "list_devices", lambda: [OCLGRIND, SMALL_GPU, BIG_GPU])
    monkeypatch.setattr(opencl, "probe_device", lambda d: Probe(True))  # made by hand
    monkeypatch.delenv("HYBRIDTREE_DEVICE", raising=False)
    monkeypatch.delenv("PYOPENCL_CTX", raising=False)
    assert opencl.choose_device() == SMALL_GPU
    assert opencl.choose_device(need_bytes=memory_needed(5_000_000)) == BIG_GPU


def test_the_devices_listing_marks_what_the_choice_passes_over():
    text = device_listing([OCLGRIND, SMALL_GPU, CPU], SMALL_GPU, memory_needed(2_000_000))
    lines = text.splitlines()
    assert lines[0].startswith("  0:0") and lines[2].startswith("* 1:0")
    assert "not chosen automatically: a simulator" in lines[1]
    assert "not chosen automatically: 0.5 GiB of memory, the run needs 0.654 GiB" in lines[3]
    assert "not chosen" not in lines[5]
    assert "runs up to about 1.5e+06 particles" in lines[3]


def test_a_real_device_is_described_with_its_limits(runtime):
    d = runtime.info
    assert d.max_work_group_size >= 1 and d.local_mem_size >= 16384
    assert d.global_mem_size > 0 and d.fp64 == runtime.has_fp64
    assert not d.simulator


TINY = DeviceInfo(0, 0, "x", "tiny GPU", "gpu", 1, "OpenCL 1.2", max_work_group_size=32,
                  local_mem_size=4096)


@pytest.mark.parametrize("name", list(PROFILES) + ["tiny", "undescribed"])
def test_work_groups_and_tunings_fit_the_device(name):
    info = {"tiny": TINY, "undescribed": DeviceInfo(0, 0, "x", "y", "gpu", 1, "1.2")}.get(
        name) or PROFILES[name]
    limit, local = info.work_group_limit(), info.local_mem_limit()
    for split in (True, False):
        wg = direct_defines(info, 0.01, split)["WG"]
        assert wg <= limit and wg * (32 if split else 16) <= local
        assert wg <= WALK_TUNING.device(info.kind).direct_wg
    for wg, per_item in ((extent_work_group(info), 48), (reduce_work_group(info), 16)):
        assert wg & (wg - 1) == 0 and wg <= limit and wg * per_item <= local
    t = fit_tuning(TUNING.get(info.kind, TUNING["gpu"]), info)
    assert t.wg <= limit and local_bytes(t) <= local


def test_measured_tunings_stay_where_the_device_allows_them():
    """The fitting changes nothing on the devices the defaults were measured on (H100,
    PoCL) and halves the direct kernel's work-group on AMD (256 work-items at most)."""
    h100, mi250, cpu = PROFILES["nvidia-h100"], PROFILES["amd-mi250"], PROFILES["pocl-cpu"]
    assert direct_defines(h100, 0.01)["WG"] == 512
    assert direct_defines(mi250, 0.01)["WG"] == 256
    assert direct_defines(cpu, 0.01)["WG"] == 64
    assert fit_tuning(TUNING["gpu"], h100) == TUNING["gpu"]
    assert fit_tuning(TUNING["cpu"], cpu) == TUNING["cpu"]
    assert (extent_work_group(h100), reduce_work_group(h100)) == (256, 256)
    assert fit_tuning(Tuning(256, 16, 8, 8), mi250).wg < 256     # 8-bit digits: 128 KiB


@pytest.mark.skipif(not any(d.vendor == "pocl" and opencl.probe_device(d).ok
                            for d in opencl.list_devices()),
                    reason="needs a working PoCL (POCL_MAX_WORK_GROUP_SIZE; Intel's CPU "
                           "runtime has no variable that lowers the work-group limit it "
                           "reports)")
def test_forces_on_a_device_that_reports_small_limits():
    """PoCL made to allow work-groups of 16: before the fitting, the direct kernel (64)
    and the reductions (64) failed there with INVALID_WORK_GROUP_SIZE."""
    code = ("import numpy as np\n"
            "from hybridtree.gravity import accelerations, direct_reference\n"
            "from hybridtree.ics import plummer\n"
            "from hybridtree.device.choice import get_runtime\n"
            "assert get_runtime().info.max_work_group_size == 16\n"
            "pos, _, m = plummer(600, seed=3)\n"
            "ref, _ = direct_reference(pos, m, 0.01)\n"
            "for method, tol in (('direct', 1e-5), ('tree', 3e-2)):\n"
            "    f = accelerations(pos, m, 0.01, method=method)\n"
            "    err = np.linalg.norm(f.acc - ref, axis=1) / np.linalg.norm(ref, axis=1)\n"
            "    assert err.max() < tol, (method, err.max())\n"
            "print('fine')\n")
    env = {**os.environ, "POCL_MAX_WORK_GROUP_SIZE": "16", "HYBRIDTREE_DEVICE": "pocl"}
    proc = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                          env=env, cwd=ROOT, timeout=300)
    assert proc.returncode == 0 and "fine" in proc.stdout, proc.stdout + proc.stderr


def test_runs_and_the_api_tell_the_device_choice_their_memory_need(monkeypatch):
    """The automatic choice can pass over a device too small for the run only if the run
    says how much it needs: the API passes memory_needed(n), Simulation its memory plan
    on each device weighed (context and buffers)."""
    import hybridtree
    from hybridtree.gravity import api as gravity
    from hybridtree.device import choice as opencl
    from hybridtree.run import opening
    from hybridtree.ics import plummer
    seen = []
    real = opencl.get_runtime

    def spy(device=None, need_bytes=0):
        seen.append(need_bytes)
        return real(device)
    monkeypatch.setattr(gravity, "get_runtime", spy)
    monkeypatch.setattr(opening, "get_runtime", spy)
    pos, vel, mass = plummer(700, seed=1)
    gravity.accelerations(pos, mass, 0.01)
    hybridtree.Simulation(pos, vel, mass, quiet=True)
    from hybridtree.run.plan import context_bytes
    assert seen[0] == opencl.memory_needed(700, state=False)
    assert callable(seen[1]) and len(seen) == 2
    cpu, gpu = replace(CPU, fp64=True), replace(BIG_GPU, fp64=True)   # state on the device
    assert context_bytes(cpu) + 100 * 700 < seen[1](cpu) < context_bytes(cpu) + 2000 * 700
    # a GPU's plan adds the list walk's and the staging's buffers, whatever N
    assert seen[1](cpu) - context_bytes(cpu) < seen[1](gpu) - context_bytes(gpu) < 1 << 30


def test_the_slot_is_passed_down_not_a_module_switch(monkeypatch):
    """Which of several GPUs a choice resolves to is a slot passed down from the
    process's devices (ProcessDevices.slot, set_device_slot), not a module global: a
    choice with slot 1 takes the second GPU, slot 2 the first again, and a fresh
    ProcessDevices holds nothing of the process's."""
    gpus = [SMALL_GPU, BIG_GPU]
    assert _best(gpus + [CPU], slot=1) == BIG_GPU and _best(gpus, slot=2) == SMALL_GPU
    assert _match("gpu", gpus + [CPU], slot=1) == BIG_GPU
    assert _best(gpus) == SMALL_GPU                          # slot 0 by default
    monkeypatch.setattr(opencl, "list_devices", lambda: gpus + [CPU])
    monkeypatch.setattr(opencl, "probe_device", lambda d: Probe(True))
    monkeypatch.delenv("HYBRIDTREE_DEVICE", raising=False)
    monkeypatch.delenv("PYOPENCL_CTX", raising=False)
    assert choose_device(slot=1) == BIG_GPU and choose_device(slot=0) == SMALL_GPU
    fresh = ProcessDevices()
    assert (fresh.slot, fresh.probes, fresh.chosen, fresh.runtimes) == (0, {}, {}, {})
