"""The run state on the device against the same state on the host (issue 17).

Both backends do the same float64 operations in the same order (kicks and drifts
without fused multiply-adds, net forces summed in the fixed order of
hybridtree.device.reduce), and the forces come from the same tree and the same kernels, so
20 steps of the same particles must give the same bits, plain and hybrid.  The device
diagnostics are checked against numpy on the downloaded state.
"""

import numpy as np
import pytest

from hybridtree.errors import UserInputError

from tests.helpers import device_state_mark, run_config, state_settings, stepping
from hybridtree.cli import main
from hybridtree.analysis.diagnostics import lagrangian_radii, read_diagnostics
from hybridtree.ics import plummer
from hybridtree.io.snapshot import read_snapshot
from hybridtree.device.choice import get_runtime
from hybridtree.gravity.tuning import LIST_WALK, TUNING

pytestmark = device_state_mark()

SETTINGS = state_settings("plain", "hybrid", "plain quadrupole")


@pytest.mark.parametrize("name", list(SETTINGS))
def test_device_state_steps_the_host_state_bit_for_bit(name):
    g = SETTINGS[name]
    pos, vel, m = plummer(3000, seed=21)
    runs = {b: stepping(pos, vel, m, g, b) for b in ("host", "device")}
    for _ in range(20):
        for state, scheme in runs.values():
            scheme.step(state, 1 / 128)
    host = runs["host"][0].download()
    dev = runs["device"][0].download()
    assert np.abs(dev.pos - pos).max() > 1e-3            # they moved
    for field in ("pos", "vel", "acc", "pot", "mass", "ids"):
        assert getattr(dev, field).tobytes() == getattr(host, field).tobytes(), field
    e_host, e_dev = runs["host"][1].engine.counts, runs["device"][1].engine.counts
    assert e_host == e_dev and e_dev["interactions"] > 0


def test_a_device_force_reads_back_only_what_the_build_needs(monkeypatch):
    """A force of a device state waits for the host only where the tree build needs a
    number, the cells' count with the walk's first group split (one wait for both:
    read_counts) and the packed groups' count, and, in a list walk (the GPU default), to
    learn the longest list: the cube stays on the device (a 48-byte read of the extent
    before session 29), the interaction counts add up on the device and the net force is
    removed there (one read each per force before session 21, each draining the device's
    queue).  Every read goes through read_small (a dropped event of a copy to the host
    waits too).  The counts still come out right when read."""
    import pyopencl as cl
    from hybridtree.device import transfer
    g = SETTINGS["plain"]
    pos, vel, m = plummer(3000, seed=22)
    state, scheme = stepping(pos, vel, m, g, "device")
    engine = scheme.engine
    before = engine.counts["interactions"]
    reads, waits, copy, wait = [], [], cl.enqueue_copy, transfer.wait_for

    def counting(queue, dest, src, **kwargs):
        if isinstance(dest, np.ndarray) and isinstance(src, cl.MemoryObjectHolder):
            reads.append(dest.nbytes)
        return copy(queue, dest, src, **kwargs)

    monkeypatch.setattr(cl, "enqueue_copy", counting)
    monkeypatch.setattr(transfer, "wait_for", lambda event: waits.append(1) or wait(event))
    engine.compute(state, ("full",))
    monkeypatch.setattr(cl, "enqueue_copy", copy)
    monkeypatch.setattr(transfer, "wait_for", wait)
    lists = int(dict(TUNING.device(get_runtime().info.kind).walk)["KERNEL"] == LIST_WALK)
    # the cells' and the first split's counts (8 bytes), the packed groups', the longest
    # list; no per-group, no per-particle read, and every read a wait of its own
    assert sorted(reads) == sorted([8, 4] + [4] * lists), reads
    assert len(waits) == len(reads), (waits, reads)
    host_state, host_scheme = stepping(pos, vel, m, g, "host")
    host_scheme.engine.compute(host_state, ("full",))
    added = engine.counts["interactions"] - before
    assert added == host_scheme.engine.counts["full_interactions"] // 2 > 0
    assert state.download().acc.tobytes() == host_state.download().acc.tobytes()


def test_device_diagnostics_agree_with_numpy_on_the_downloaded_state():
    pos, vel, m = plummer(4096, seed=5)        # masses 1/4096: cumulative sums are exact
    state, scheme = stepping(pos, vel, m, SETTINGS["plain"], "device")
    for _ in range(3):
        scheme.step(state, 1 / 128)
    mom = state.moments()
    p = state.download()
    kin = 0.5 * p.mass @ np.einsum("ij,ij->i", p.vel, p.vel)
    pot = 0.5 * p.mass @ p.pot
    com = p.mass @ p.pos / p.mass.sum()
    assert mom["kinetic"] == pytest.approx(kin, rel=1e-12)
    assert mom["potential"] == pytest.approx(pot, rel=1e-12)
    assert np.allclose(mom["com"], com, rtol=0, atol=1e-12 * np.abs(p.pos).max())
    scale = p.mass @ np.linalg.norm(p.vel, axis=1)
    assert np.abs(mom["momentum"] - p.mass @ p.vel).max() < 1e-12 * scale
    ang = p.mass @ np.cross(p.pos, p.vel)
    ang_scale = p.mass @ np.linalg.norm(np.cross(p.pos, p.vel), axis=1)
    assert np.abs(mom["angular_momentum"] - ang).max() < 1e-12 * ang_scale
    radii = state.lagrangian_radii(mom["com"], total_mass=mom["mass"])
    assert np.allclose(radii, lagrangian_radii(p.pos, p.mass, centre=mom["com"]), rtol=1e-12)
    # the net force was removed on the device: sum of m a vanishes to rounding
    assert np.abs(p.mass @ p.acc).max() < 1e-14 * (p.mass @ np.linalg.norm(p.acc, axis=1))


def test_the_finiteness_flag_names_the_bad_particle():
    pos, vel, m = plummer(1000, seed=2)
    state, scheme = stepping(pos, vel, m, SETTINGS["plain"], "device")
    assert state.finite()
    state.poison()
    assert not state.finite()
    assert state.bad_ids().tolist() == [1]


@pytest.mark.parametrize("hybrid", [False, True])
def test_a_host_state_run_writes_the_device_state_run(tmp_path, monkeypatch, hybrid):
    """The whole driver with the host backend forced (HYBRIDTREE_STATE=host: the path of
    devices without double precision) writes the same snapshots as the device state."""
    monkeypatch.chdir(tmp_path)
    (tmp_path / "c.toml").write_text(run_config(2000, 3, 0.6, 12, 6, 4)
                                     + f"[hybrid]\nenabled = {str(hybrid).lower()}\n")
    finals = {}
    for backend in ("host", "device"):
        monkeypatch.setenv("HYBRIDTREE_STATE", backend)
        assert main(["run", "c.toml", "--quiet", "--set", f"output.dir={backend}"]) == 0
        finals[backend] = read_snapshot(tmp_path / backend / "snapshot_0002.hdf5").particles
        rows = read_diagnostics(tmp_path / backend / "diagnostics.csv")
        assert [r["step"] for r in rows] == ["0", "4", "8", "12"]
        for col in ("t_build", "t_walk", "t_integrate", "t_reduce", "step_s"):
            assert float(rows[-1][col]) > 0, col
        finals[backend + " energy"] = [r["total"] for r in rows]
    for field in ("pos", "vel", "acc", "pot"):
        assert (getattr(finals["host"], field).tobytes()
                == getattr(finals["device"], field).tobytes()), field
    assert finals["host energy"] == finals["device energy"]


def test_forcing_a_device_state_where_there_can_be_none_is_an_error(monkeypatch):
    from hybridtree.state import state_backend
    monkeypatch.setenv("HYBRIDTREE_STATE", "device")
    with pytest.raises(UserInputError, match="HYBRIDTREE_STATE=device needs the tree method"):
        state_backend(get_runtime(), "direct")
    monkeypatch.setenv("HYBRIDTREE_STATE", "gpu")
    with pytest.raises(ValueError, match="must be host or device"):
        state_backend(get_runtime())
