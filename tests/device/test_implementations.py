"""Issue 34, a standing check: the stated accuracy on every OpenCL implementation the
machine has.  The direct kernel and the tree walk against float64 sums, and one short
run's energy error, on every device that passes the probe (no simulators): with the
`cpu` extra that is PyPI's PoCL and Intel's CPU runtime where both work, so CI compares
two implementations of OpenCL (and their math libraries) on every run."""

import numpy as np
import pytest
from tests.helpers import rel_err

import hybridtree
from hybridtree.gravity import accelerations, direct_reference
from hybridtree.ics import plummer
from hybridtree.device.choice import list_devices, probe_device

EPS = 0.01


def _working() -> list[str]:
    out = []
    for d in list_devices():
        if not d.simulator and probe_device(d).ok:
            out.append(f"{d.platform_index}:{d.device_index}")
    return out


DEVICES = _working()
IDS = [next(d.label for d in list_devices() if f"{d.platform_index}:{d.device_index}" == i)
       for i in DEVICES]


@pytest.fixture(scope="module")
def sphere():
    pos, vel, mass = plummer(20_000, seed=34)
    idx = np.random.default_rng(34).choice(len(pos), 800, replace=False)
    ref, pot = direct_reference(pos, mass, EPS, sinks=pos[idx])
    return pos, vel, mass, idx, ref, pot


def test_at_least_one_implementation_works():
    assert DEVICES, "no OpenCL device passed the probe"


@pytest.mark.parametrize("device", DEVICES, ids=IDS)
def test_direct_kernel_against_float64(device, sphere):
    pos, _, mass, idx, ref, pot = sphere
    f = accelerations(pos, mass, EPS, method="direct", sinks=pos[idx], device=device)
    e = rel_err(f.acc, ref)
    assert np.median(e) < 1e-6, np.median(e)
    assert e.max() < 2e-5, e.max()
    pe = np.abs(f.pot - pot) / np.abs(pot)
    assert np.median(pe) < 1e-6, np.median(pe)


@pytest.mark.parametrize("device", DEVICES, ids=IDS)
def test_tree_walk_against_float64(device, sphere):
    pos, _, mass, idx, ref, _ = sphere
    e = rel_err(accelerations(pos, mass, EPS, theta=0.5, device=device).acc[idx], ref)
    assert np.median(e) < 4e-4 and np.percentile(e, 99) < 3e-3, (np.median(e), e.max())
    fine = rel_err(accelerations(pos, mass, EPS, theta=0.05, device=device).acc[idx], ref)
    assert np.median(fine) < 1e-6 and fine.max() < 5e-5, (np.median(fine), fine.max())


@pytest.mark.parametrize("device", DEVICES, ids=IDS)
def test_a_short_run_conserves_energy(device, sphere):
    pos, vel, mass = (a[:4096] for a in sphere[:3])
    mass = mass * (len(sphere[2]) / 4096)
    # geometric theta = 0.5, as this test was made for: "auto" takes the relative
    # criterion, whose monopole walks (the GPUs' default) drift 6.4e-5 here (issue 30's
    # closing note of session 15)
    sim = hybridtree.Simulation(pos, vel, mass, dt=1 / 256, eps=EPS, theta=0.5, quiet=True,
                                device=device, settings={"gravity.opening": "geometric"})
    sim.evolve(0.5)
    assert abs(sim.energy_error) < 2e-5, sim.energy_error
