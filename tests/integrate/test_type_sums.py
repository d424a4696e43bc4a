"""The per-type diagnostics (diagnostics_types.csv) where the state lives: each type's sums
are the whole set's with the type's masses and 0 for the other particles, computed on the
device for a device state (nothing downloaded), against numpy sums over the type's own
particles (an independent reference) and against the host state's path."""

import numpy as np
import pytest

from hybridtree.device.choice import get_runtime
from hybridtree.gravity.engine import GravitySettings
from hybridtree.ics import plummer
from hybridtree.state.quantities import lagrangian_radii
from hybridtree.integrate.stepper import SerialStepper
from hybridtree.particles import Particles

N = 3000


def _particles() -> Particles:
    """A Plummer sphere cut into three types of different masses and no type 3, the
    types in no order (so a mask, not a slice, picks each)."""
    pos, vel, mass = plummer(N, seed=7)
    types = np.random.default_rng(3).choice([1, 2, 4], size=N, p=[0.6, 0.3, 0.1])
    mass = mass * np.select([types == 1, types == 2], [1.0, 0.5], 3.0)
    return Particles(pos, vel + 0.1, mass, np.arange(1, N + 1, dtype=np.uint64),
                     types=types.astype(np.uint8))


def _reference(p: Particles, t: int) -> dict:
    """The type's particles alone, in numpy."""
    rows = p.types == t
    m, x, v = p.mass[rows], p.pos[rows], p.vel[rows]
    com = m @ x / m.sum()
    lx, ly, lz = m @ np.cross(x, v)
    r10, r50, r90 = lagrangian_radii(x, m, centre=com)
    return {"type": t, "particles": int(rows.sum()), "mass": m.sum(),
            "kinetic": 0.5 * m @ (v * v).sum(axis=1), "potential": 0.5 * m @ p.pot[rows],
            "lx": lx, "ly": ly, "lz": lz, "r10": r10, "r50": r50, "r90": r90}


@pytest.mark.parametrize("backend", ["device", "host"])
def test_type_sums_are_the_sums_over_each_types_own_particles(backend, monkeypatch):
    monkeypatch.setenv("HYBRIDTREE_STATE", backend)
    rt = get_runtime()
    if backend == "device" and not rt.has_fp64:
        pytest.skip(f"{rt.info.label} lacks cl_khr_fp64: no device state")
    stepper = SerialStepper(GravitySettings(eps=0.01), _particles(), rt)
    assert stepper.backend == backend
    stepper.start(False)                        # potentials for the potential sums
    p = stepper.particles()
    counts = np.bincount(p.types, minlength=6)
    rows = stepper.type_sums([1, 2, 4, 3], counts)
    for row, t in zip(rows, [1, 2, 4]):
        want = _reference(p, t)
        assert row.keys() == want.keys() and row["particles"] == want["particles"]
        for key in ("mass", "kinetic", "potential", "lx", "ly", "lz", "r10", "r50", "r90"):
            assert row[key] == pytest.approx(want[key], rel=1e-11, abs=1e-14), (t, key)
    # a type without particles: no mass, no radii
    assert rows[3]["particles"] == 0 and rows[3]["mass"] == 0.0
    assert all(np.isnan(rows[3][k]) for k in ("r10", "r50", "r90"))
    # the types add up to the whole set
    whole = stepper.moments()
    assert sum(r["kinetic"] for r in rows) == pytest.approx(whole["kinetic"], rel=1e-12)
    assert sum(r["potential"] for r in rows) == pytest.approx(whole["potential"], rel=1e-12)
