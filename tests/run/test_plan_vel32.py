"""The memory plan of float32 velocities (memory.velocities = "float32", issue 56): the
state's figure 12 bytes a particle less, checked against the ledger's peak of a run as
tests/run/test_plan.py checks every owner; a plan the device cannot hold with float64
velocities but could with float32 ones says so in its refusal."""

from dataclasses import replace

from tests.run.test_plan import ledger_peaks, plummer_settings
from hybridtree.run.plan import BYTES, _size, device_plan

F32 = {"memory.velocities": "float32"}


def test_the_state_of_float32_velocities_is_the_ledgers_within_five_percent(runtime):
    """A 2^15 Plummer run with float32 velocities: the plan's state is the ledger's state
    peak within 5 % (the same bound as every owner's in test_plan.py), and 12 bytes a
    particle below the plan of float64 velocities; the other owners do not change."""
    n = 1 << 15
    rep = ledger_peaks(n, **F32)
    plan = device_plan(plummer_settings(n, **F32), runtime.info, n)
    wide = device_plan(plummer_settings(n), runtime.info, n)
    assert set(plan.owners) == set(rep["owner_peak"]), (plan.owners, rep)
    peak = rep["owner_peak"]["state"]
    assert 0.95 * plan.owners["state"] <= peak <= 1.05 * plan.owners["state"], (plan, rep)
    assert wide.owners["state"] - plan.owners["state"] == 12 * n == BYTES["state_vel32"][0] * n
    assert {k: v for k, v in plan.owners.items() if k != "state"} == \
        {k: v for k, v in wide.owners.items() if k != "state"}


def test_a_refusal_names_float32_velocities_where_they_would_fit(runtime):
    """A device between the two plans' totals: the float64 plan's refusal ends with what
    float32 velocities would need; the float32 plan fits.  A device too small for either,
    or a run whose state is on the host (a device without double precision: float32
    velocities save no device memory there), gets no such hint."""
    n = 1 << 20
    wide = device_plan(plummer_settings(n), runtime.info, n)
    narrow = device_plan(plummer_settings(n, **F32), runtime.info, n)
    assert wide.total - narrow.total == 12 * n
    info = replace(runtime.info, global_mem_size=(wide.total + narrow.total) // 2,
                   max_mem_alloc_size=1 << 40)
    why = device_plan(plummer_settings(n), info, n).refusal()
    assert why.startswith("need about") and why.endswith(
        f'(memory.velocities = "float32" would need about {_size(narrow.total)})'), why
    assert device_plan(plummer_settings(n, **F32), info, n).refusal() == ""
    small = replace(info, global_mem_size=narrow.total - 1)
    assert "memory.velocities" not in device_plan(plummer_settings(n), small, n).refusal()
    host = device_plan(plummer_settings(n), replace(info, fp64=False, global_mem_size=1 << 20),
                       n).refusal()
    assert host.startswith("need about") and "memory.velocities" not in host
