"""The memory plan (hybridtree/run/plan.py) against what runs hold: the ledger's peaks
per owner, the process's resident memory on a CPU device, the refusal before anything
is allocated, the end: line's context estimate and ``hybridtree devices``."""

import os
import subprocess
import sys
from dataclasses import replace

import pytest

from tests.helpers import ROOT, one_error_line, run_config
from hybridtree.cli import main
from hybridtree.config.settings import settings_from_flat
from hybridtree.gravity.pm_compact import compact_mesh_bytes
from hybridtree.run.plan import BYTES, context_bytes, default_largest, device_plan, largest_n

CONFIG = run_config(300, 4, 0.6, 4, 2, 2, 1 / 64)
PLUMMER = {"ics.kind": "plummer", "gravity.eps": 0.01}


def plummer_settings(n: int, **more):
    return settings_from_flat({**PLUMMER, "ics.n": n, **more})


#: a run's ledger report, measured in a process of its own: the ledger belongs to the
#: process's runtime, which other tests of the same worker leave buffers in (their kept
#: workspaces, list rooms), and the peak of a run counts what is alive beside it
_CHILD = """
import json, sys
import hybridtree
from hybridtree.config.settings import load_config, settings_from_flat
flat, config, evolve = json.loads(sys.argv[1])
settings = load_config(config, flat) if config else settings_from_flat(flat)
with hybridtree.Simulation.from_settings(settings, quiet=True) as sim:
    sim.evolve(**evolve) if evolve else sim.evolve(sim.t_end)
    print(json.dumps(sim.memory))
"""


def child_memory(flat: dict, config: str | None = None, evolve: dict | None = None) -> dict:
    """``Simulation.memory`` of a run of ``flat`` settings (over ``config``), evolved to
    its end (or by ``evolve``), in a child process on the session's device."""
    import json
    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    proc = subprocess.run([sys.executable, "-c", _CHILD, json.dumps([flat, config, evolve])],
                          env=env, capture_output=True, text=True, timeout=300)
    assert proc.returncode == 0, proc.stderr
    return json.loads(proc.stdout.strip().splitlines()[-1])


def ledger_peaks(n: int, **more) -> dict:
    """The ledger's report of a two-step Plummer run of ``n`` particles."""
    return child_memory({**PLUMMER, "ics.n": n, "time.dt": 1 / 128, "time.t_end": 2 / 128,
                         **more})


@pytest.mark.parametrize("more", [{}, {"hybrid.enabled": True, "gravity.multipole":
                                       "monopole", "time.stepping": "shared"}])
def test_the_plan_is_each_owners_peak_within_five_percent(runtime, more):
    """Per owner the plan is the ledger's own peak of a run within 5 % (2^15 particles:
    the per-particle terms dominate, a few seconds per run).  The tree's cells are
    planned twice (the last tree keeps them while a larger build makes its own): its
    peak lies between one and two generations of them."""
    n = 1 << 15
    rep = ledger_peaks(n, **more)
    settings = plummer_settings(n, **more)
    plan = device_plan(settings, runtime.info, n)
    assert set(plan.owners) == set(rep["owner_peak"]), (plan.owners, rep)
    for owner, peak in rep["owner_peak"].items():
        low = plan.owners[owner]
        if owner == "tree":
            g = settings.gravity
            per_cell = BYTES["tree_cell"][0] + BYTES["tree_cell_quad"][0] * (
                plan_multipole(runtime, more) == "quadrupole")
            low -= per_cell * BYTES["cells_per_particle"][0] * 16 / g.n_leaf * n
        if owner == "reductions":       # the level sums of the sums asked for: 19-21 B
            low *= 19 / 21
        assert 0.95 * low <= peak <= 1.05 * plan.owners[owner], (owner, plan.owners, rep)
    assert plan.buffers >= 0.95 * rep["peak"]


def plan_multipole(runtime, more: dict) -> str:
    multipole = more.get("gravity.multipole", "auto")
    return multipole if multipole != "auto" else (
        "quadrupole" if runtime.info.kind == "cpu" else "monopole")


def test_a_run_that_its_device_cannot_hold_is_refused_before_anything_is_made(
        here, capsys, monkeypatch, runtime):
    """Host memory plenty (patched), the device named: an N whose plan exceeds the
    device's memory is one line, status 2, before a runtime (a context, a buffer) is made
    and before any particle is drawn.  Today's code made the runtime first."""
    from hybridtree import ics
    from hybridtree.run import size
    info = runtime.info

    def made(*args, **kwargs):
        raise AssertionError("a runtime was made")

    def drawn(*args, **kwargs):
        raise AssertionError("the initial-condition generator was called")

    monkeypatch.setattr(size, "get_runtime", made)
    monkeypatch.setattr(ics, "generate_share", drawn)
    monkeypatch.setattr(size, "host_memory_available", lambda: (1 << 50, "MemAvailable"))
    n = info.global_mem_size // 150          # the plan takes > 170 B per particle
    device = f"{info.platform_index}:{info.device_index}"
    assert main(["run", "c.toml", "--quiet", "--device", device, "--set", f"ics.n={n}"]) == 2
    msg = one_error_line(capsys, f"N = {n} particles", "of device memory", "tree",
                         "context", "(estimate)")
    assert f"has {info.global_mem_size / 2**30:.3g} GiB" in msg, msg
    assert not (here / "out").exists()


def test_a_buffer_past_the_devices_largest_is_refused(runtime):
    """The largest buffer of a run, its positions (24 bytes per particle), against the
    device's largest allocation (a billion particles on an 80 GB card: 24 GB, where
    NVIDIA allows a quarter of the memory at once)."""
    info = replace(runtime.info, global_mem_size=1 << 40, max_mem_alloc_size=(24 << 20) - 1)
    settings = plummer_settings(1 << 20)
    why = device_plan(settings, info, 1 << 20).refusal()    # positions: 24 MiB
    assert "need a buffer of 24 MiB" in why and "allocates at most 24 MiB" in why, why
    assert not device_plan(settings, info, 1 << 19).refusal()
    assert largest_n(settings, info) == pytest.approx(1 << 20, rel=0.002)


def test_the_largest_n_fits_and_a_tenth_more_does_not(runtime):
    info = replace(runtime.info, global_mem_size=8 << 30)
    s = plummer_settings(1000)
    n = largest_n(s, info)
    assert not device_plan(s, info, n).refusal()
    assert device_plan(s, info, int(1.1 * n)).refusal()
    # a GPU's plan holds the lists' budget, the staging ring and the context too
    gpu = replace(info, kind="gpu", vendor="nvidia", global_mem_size=80 << 30,
                  max_mem_alloc_size=20 << 30)
    plan = device_plan(s, gpu, 1 << 26)
    assert plan.owners["lists"] == 8 << 30 and plan.owners["staging"] == 64 << 20
    assert plan.context == 528 << 20


def test_the_end_line_adds_the_contexts_estimate(here, runtime):
    assert main(["run", "c.toml", "--quiet"]) == 0
    end = [line for line in (here / "out" / "run.log").read_text().splitlines()
           if line.startswith("end:")][-1]
    fields = dict(kv.split("=", 1) for kv in end.split()[1:])
    context = context_bytes(runtime.info) / 2**20
    assert float(fields["device_context_estimate_mib"]) == pytest.approx(context, abs=0.05)
    assert float(fields["device_total_estimate_mib"]) == pytest.approx(
        float(fields["device_peak_mib"]) + context, abs=0.11)


def test_devices_tells_the_largest_n_of_the_default_runs(capsys, runtime):
    assert main(["devices"]) == 0
    out = capsys.readouterr().out
    plummer, box = default_largest(runtime.info)
    assert 0 < box < plummer
    assert (f"runs up to about {plummer:.2g} particles: a Plummer run with the default "
            f"settings; a periodic box {box:.2g}") in out, out


@pytest.mark.parametrize("lean", [{}, {"memory.mesh": "float32",
                                       "memory.velocities": "float32"}])
def test_a_periodic_boxs_plan_bounds_its_ledger_within_ten_percent(runtime, lean):
    """A 32^3 ΛCDM box (TreePM: the mesh's buffers and sort too; or the float32 mesh,
    its float4 force and one mass), two steps: no owner holds more than planned, and
    the plan is the ledger's peak within 10 % (its tree has fewer cells per particle
    than a Plummer sphere's, which the plan assumes)."""
    from hybridtree.config.settings import load_config
    flat = {"cosmology.steps": 2, "cosmology.z_end": 45.0, "output.redshifts": "45", **lean}
    config = str(ROOT / "configs" / "cosmo_box_small.toml")
    settings = load_config(config, flat)
    n = 32 ** 3
    rep = child_memory(flat, config, {"z": 45.0})
    plan = device_plan(settings, runtime.info, n)
    assert set(plan.owners) == set(rep["owner_peak"]), (plan.owners, rep)
    for owner, peak in rep["owner_peak"].items():
        assert peak <= 1.02 * plan.owners[owner], (owner, plan.owners, rep)
    assert rep["peak"] <= plan.buffers <= 1.10 * rep["peak"], (plan.owners, rep)
    assert plan.mesh_side == 32
    if lean:        # two float32 meshes, no sort of the particles, nothing unseen
        assert not plan.unseen and "sort_mesh" not in str(plan.owners)
        assert plan.owners["mesh"] == compact_mesh_bytes(32)[1]
    else:
        assert plan.unseen["mesh FFT"] > 0


def test_a_box_the_h200_cannot_hold_is_told_the_float32_mesh(runtime):
    """A 1024^3 box (TreePM) on an H200's figures: the float64 mesh needs ~337 GiB and is
    refused with the float32 settings' own need, which fits."""
    from hybridtree.device.runtime import DeviceInfo
    h200 = DeviceInfo(0, 0, "NVIDIA CUDA", "NVIDIA H200", "gpu", 132, "OpenCL 3.0",
                      vendor="nvidia", max_work_group_size=1024, local_mem_size=49152,
                      global_mem_size=143771 * 2 ** 20, max_mem_alloc_size=35942 * 2 ** 20,
                      fp64=True)
    box = {"ics.kind": "cosmo_box", "ics.n_grid": 1024, "ics.box": 700.0,
           "cosmology.enabled": True}
    n = 1 << 30
    why = device_plan(settings_from_flat(box), h200, n).refusal()
    lean = device_plan(settings_from_flat({**box, "memory.mesh": "float32",
                                           "memory.velocities": "float32"}), h200, n)
    assert not lean.refusal() and lean.total < 135 * n, lean.describe()
    assert why.endswith('(memory.mesh = "float32" and memory.velocities = "float32" would '
                        f'need about {lean.total / 2 ** 30:.3g} GiB)'), why


#: a run on the session's device through a GPU's paths (the list walk with lists of 8
#: bytes a particle, as a 2^30 run's 8 GiB, made for each walk; unfused reductions)
_GPU_PATHS = """
import json, sys
import hybridtree
from hybridtree.config.settings import settings_from_flat
from hybridtree.device.reduce import Reducer
from hybridtree.gravity.tuning import TUNING
flat, n = json.loads(sys.argv[1])
for k, v in {"cpu": TUNING.gpu, "list_batch_bytes": 8 * n, "list_kept_bytes": 0}.items():
    object.__setattr__(TUNING, k, v)
Reducer._fuses = lambda self, name, k, nr: False
with hybridtree.Simulation.from_settings(settings_from_flat(flat), quiet=True) as sim:
    sim.evolve(sim.t_end)
    print(json.dumps(sim.memory))
"""


def test_the_keys_the_lists_and_the_reductions_rows_are_planned_once(runtime, monkeypatch):
    """On a GPU's paths the build's sorted keys, a large walk's lists and the reductions'
    level rows are each alive in one stage only (issue 56: the keys and the lists were
    held together, the rows kept): the run's peak holds not both the keys and the lists,
    and the plan's total, which counts the three once (Plan.apart), is the ledger's peak
    within 5 %.  The child takes a GPU's paths by setting the walk's tuning and the
    reductions' fusing in its own process (no GPU in CI)."""
    import json
    from hybridtree.gravity.tuning import TUNING
    n = 1 << 15
    flat = {**PLUMMER, "ics.n": n, "time.dt": 1 / 128, "time.t_end": 2 / 128,
            "gravity.multipole": "monopole"}
    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    proc = subprocess.run([sys.executable, "-c", _GPU_PATHS, json.dumps([flat, n])],
                          env=env, capture_output=True, text=True, timeout=300)
    assert proc.returncode == 0, proc.stderr
    rep = json.loads(proc.stdout.strip().splitlines()[-1])
    monkeypatch.setenv("HYBRIDTREE_STAGING", "never")
    gpu = replace(runtime.info, kind="gpu", vendor="nvidia")
    plan = device_plan(plummer_settings(n, **{"gravity.multipole": "monopole"}), gpu, n,
                       tuning=replace(TUNING, list_batch_bytes=8 * n, list_kept_bytes=0))
    keys, lists = BYTES["tree_keys"][0] * n, rep["owner_peak"]["lists"]
    inverse = BYTES["tree_inverse"][0] * n          # the walk's, where it asks for it
    at, most = rep["at_peak"], rep["owner_peak"]
    assert at["tree"] + at["lists"] <= most["tree"] + most["lists"] - min(keys, lists) + inverse
    assert plan.apart > 0
    assert 0.95 * plan.buffers <= rep["peak"] <= 1.05 * plan.buffers, (plan.owners, rep)


def test_a_generated_sphere_plans_its_mass_once_and_2_30_fits_an_h200(runtime):
    """A generated sphere on one process keeps one mass for all (DeviceState uniform):
    its state plans 8 bytes a particle less than a model of several masses (as for a
    file's particles, unknown before reading), and 2^30 particles fit an H200's 143 771 MiB."""
    h200 = replace(runtime.info, kind="gpu", vendor="nvidia", global_mem_size=143771 << 20,
                   max_mem_alloc_size=35942 << 20, fp64=True)
    s = plummer_settings(1 << 20)
    n = 1 << 30
    other = plummer_settings(1 << 20, **{"ics.kind": "galaxy"})    # masses of its own
    assert (device_plan(other, h200, n).owners["state"]
            - device_plan(s, h200, n).owners["state"]) == 8 * n
    assert not device_plan(s, h200, n).refusal()


def test_a_restart_with_stored_forces_plans_float64_parts(runtime, monkeypatch):
    """A restart that continues with its snapshot's stored forces keeps them as float64
    parts (integrate/stepper.py SerialStepper), not the walk's float4: its plan counts the
    16 bytes a particle more, and a 2^30 restart with float32 velocities, whose run fit an
    H200, is refused in one line that says why (not an allocation failing mid-run)."""
    from hybridtree.device.runtime import DeviceError
    from hybridtree.run import size
    h200 = replace(runtime.info, kind="gpu", vendor="nvidia", global_mem_size=143771 << 20,
                   max_mem_alloc_size=35942 << 20, fp64=True)
    s = plummer_settings(1 << 20, **{"memory.velocities": "float32"})
    n = 1 << 30
    assert (device_plan(s, h200, n, stored=True).owners["state"]
            - device_plan(s, h200, n).owners["state"]) == 16 * n
    assert not device_plan(s, h200, n).refusal()
    assert "of device memory" in device_plan(s, h200, n, stored=True).refusal()
    monkeypatch.setattr(size, "choose_device", lambda *args, **kwargs: h200)
    with pytest.raises(DeviceError, match="a restart keeps its snapshot's forces as float64"):
        size._device_for(s, n, n, 1, stored=True)
