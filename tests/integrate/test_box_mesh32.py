"""A periodic box with the float32 mesh (memory.mesh = "float32", issue 56): the run keeps
its force as the walk's float4 with the mesh added (16 bytes a particle, no float64 part
or potential) and one mass for all, and steps the same physics as the float64 mesh: a
second code path (gravity/pm_device.py, complex128 FFTs and float64 parts) is the
reference.  Units: the config's (Mpc, 1e10 Msun)."""

import numpy as np

import hybridtree
from hybridtree.config.settings import load_config
from tests.helpers import ROOT, one_error_line
from hybridtree.cli import main

CONFIG = str(ROOT / "configs" / "cosmo_box_small.toml")
#: three steps of the config's 512 (z = 49 to about 48.1), no snapshots
STEPS = {"cosmology.steps": 3, "cosmology.z_end": 48.1241, "output.redshifts": ""}


def _run(runtime, **more):
    settings = load_config(CONFIG, {**STEPS, **more})
    with hybridtree.Simulation.from_settings(settings, quiet=True) as sim:
        state = sim._stepper.state
        layout = (state.float4, state.mass_step)
        sim.evolve(z=48.1241)
        p = sim.particles()
        order = np.argsort(p.ids)
        return layout, p.pos[order], p.vel[order], p.acc[order], p.pot[order]


def test_the_float32_mesh_steps_the_float64_meshs_box(runtime):
    """Three steps of a 32^3 ΛCDM box (TreePM, TSC interlaced, a 32^3 mesh): the float32
    run keeps a float4 part and one mass; its accelerations and potentials after the
    last step are the float64 run's within 2e-6 of the rms (the float32 FFT and deposit,
    the float32 sum of walk and mesh: measured 1.0e-7 and 1.8e-7 on the CPU device), its
    positions within 1e-11 of the box (measured 1.2e-13), its velocities 1e-7 of the
    largest (3e-9)."""
    (four64, step64), x64, v64, a64, phi64 = _run(runtime)
    (four32, step32), x32, v32, a32, phi32 = _run(runtime, **{"memory.mesh": "float32"})
    assert (four64, step64) == (False, 1) and (four32, step32) == (True, 0)
    box = 142.85714285714286
    dx = (x32 - x64 + 0.5 * box) % box - 0.5 * box
    assert np.max(np.abs(dx)) < 1e-11 * box, np.max(np.abs(dx))
    rms_a = np.sqrt(np.mean(np.sum(a64 ** 2, axis=1)))
    err_a = np.sqrt(np.mean(np.sum((a32 - a64) ** 2, axis=1))) / rms_a
    assert 0 < err_a < 2e-6, err_a
    err_phi = np.sqrt(np.mean((phi32 - phi64) ** 2)) / np.sqrt(np.mean(phi64 ** 2))
    assert 0 < err_phi < 2e-6, err_phi
    assert np.max(np.abs(v32 - v64)) < 1e-7 * np.max(np.abs(v64))


def test_a_float32_mesh_needs_a_power_of_two_mesh(capsys, tmp_path):
    """A pm_grid of 48 with the float32 mesh: one line naming the way out, exit 2."""
    code = main(["run", CONFIG, "--set", "memory.mesh=float32", "--set", "gravity.pm_grid=48",
                 "--set", f"output.dir={tmp_path / 'out'}", "--set", "cosmology.steps=1"])
    assert code == 2
    one_error_line(capsys, "power-of-two pm_grid", "memory.mesh = 'float64'")
    assert not (tmp_path / "out").exists() or not any((tmp_path / "out").iterdir())
