"""A periodic box's TreePM forces on many processes (mpiexec, oversubscribed on the CI's
two cores): the mesh in slabs over the processes, the short-range LET cut at r_cut with
nearest-image distances, against one process, the host mesh and an Ewald sum."""

from pathlib import Path

import h5py
import numpy as np
import pytest

from hybridtree.analysis.diagnostics import read_diagnostics
from hybridtree.analysis.power import snapshot_power
from hybridtree.gravity import accelerations
from hybridtree.gravity.periodic import Periodic
from hybridtree.gravity.pm import pm_forces
from hybridtree.io.hdf5_files import snapshot_files
from tests.ewald import ewald
from tests.helpers import ROOT, once_per_run
from tests.parallel.mpi_worker import periodic_set
from tests.parallel.test_mpi import run_mpi
from tests.parallel.test_mpi_run import hybridtree, ok

pytestmark = pytest.mark.mpi

N = 4096


def _rel(a, b):
    return np.linalg.norm(a - b, axis=1) / np.linalg.norm(b, axis=1)


def _by_id(r: dict) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    tab = r["table"]
    ids = tab[:, 0].astype(np.int64)
    assert np.array_equal(np.sort(ids), np.arange(N))       # every particle once
    out = np.empty_like(tab)
    out[ids] = tab
    return out[:, 1:4], out[:, 4:7], out[:, 7]


@pytest.fixture(scope="module")
def periodic_runs(tmp_path_factory):
    """``run(k, opening)``: the forces of :func:`periodic_set` on k processes, each run once
    a run (:func:`tests.helpers.once_per_run`, for both workers): the one-process and the
    two-process geometric runs serve both the tests against one process and those against
    Ewald (they were run twice)."""
    runs = {}

    def run(k: int, opening: str = "geometric") -> dict:
        if (k, opening) not in runs:
            runs[k, opening] = once_per_run(
                tmp_path_factory, f"test_mpi_periodic.periodic_runs-{k}-{opening}",
                lambda: run_mpi(k, N, tmp_path_factory.mktemp(f"p{k}{opening}"),
                                {"mode": "periodic", "opening": opening}))
        return runs[k, opening]
    return run


@pytest.fixture(scope="module")
def one(periodic_runs):
    return _by_id(periodic_runs(1))


@pytest.fixture(scope="module")
def reference(tmp_path_factory):
    """Ewald's forces (float64) on 150 of the particles (once a run: once_per_run)."""
    def make() -> tuple[np.ndarray, np.ndarray]:
        pos, mass = periodic_set(N)
        idx = np.random.default_rng(8).choice(N, 150, replace=False)
        acc, _ = ewald(pos, mass, 1.0, sinks=pos[idx], a=3.0, n_real=1, n_k=8)
        return idx, acc
    return once_per_run(tmp_path_factory, "test_mpi_periodic.reference", make)


@pytest.mark.parametrize("k", [2, 4])
def test_k_processes_give_one_process_forces(k, one, periodic_runs):
    """The mesh (long range) is the one-process mesh to rounding: the density is summed
    over the processes in another order, nothing else differs.  The short range comes
    from other trees (the local particles and the LETs that arrived), so it differs by
    the tree's approximation, far below its error against Ewald (measured on the 2-core
    machine's CPU device: mesh 5e-16 and 7e-16 of the largest long-range force on 2 and
    4 processes; short range median 1.8e-8 and 8e-8, p99 1.1e-4 and 1.3e-4)."""
    r = periodic_runs(k)
    short, long_, pot = _by_id(r)
    assert r["let"] > 0
    s1, l1, p1 = one
    assert np.abs(long_ - l1).max() < 1e-10 * np.abs(l1).max()
    err = _rel(short, s1)
    assert np.median(err) < 2e-5 and np.percentile(err, 99) < 5e-4, \
        (np.median(err), np.percentile(err, 99))
    assert np.median(np.abs(pot - p1)) < 1e-5 * np.median(np.abs(p1))


#: the mesh-in-slabs cases (k, n_mesh, split, order, interlace)
SLAB_CASES = [(2, 20, "x", 3, True), (3, 21, "mixed", 3, True), (3, 20, "idle", 2, False),
              (4, 24, "x", 2, True)]


@pytest.fixture(scope="module")
def slab_runs(tmp_path_factory):
    """``run(case)``: the slab worker's result for one of :data:`SLAB_CASES`; the cases
    of one process count run in one mpiexec (the process starts and the kernel builds
    they share were most of each case's time), once a run (tests.helpers.once_per_run: the
    two cases of 3 processes went to both workers, each running both)."""
    runs = {}

    def run(case: tuple) -> dict:
        k = case[0]
        if k not in runs:
            mine = [c for c in SLAB_CASES if c[0] == k]
            opts = {"mode": "slabs", "cases": [{"n_mesh": c[1], "split": c[2], "order": c[3],
                                                "interlace": c[4]} for c in mine]}
            r = once_per_run(tmp_path_factory, f"test_mpi_periodic.slab_runs-{k}", lambda: run_mpi(
                k, 3000, tmp_path_factory.mktemp(f"slabs{k}"), opts))
            runs[k] = {c: {"table": r[f"table{i}"], "windows": r[f"windows{i}"],
                           "pos": r["pos"], "mass": r["mass"]} for i, c in enumerate(mine)}
        return runs[k][case]
    return run


@pytest.mark.parametrize("k, n_mesh, split, order, interlace", SLAB_CASES)
def test_mesh_in_slabs_gives_the_host_mesh(k, n_mesh, split, order, interlace, slab_runs):
    """The long range with the mesh in slabs over k processes (each process's particles
    on a window of x-planes, the slabs transformed and transposed through MPI) against
    the float64 host mesh of all particles: rounding only (measured on the 2-core
    machine: 1.5e-15 to 1.0e-14 of the largest force, 3e-15 to 4e-14 of the largest
    potential).  Uneven slabs (3 of 20 and 21 planes, the odd side's y-pairs), CIC and
    TSC, one mesh or two, a process without particles, particles just outside the box;
    where each process holds a third of x its window is a third of the mesh and some.
    The two cases of 3 processes run in one mpiexec, one after the other (so a second
    SlabMesh in a process is checked too)."""
    r = slab_runs((k, n_mesh, split, order, interlace))
    tab = r["table"]
    ids = tab[:, 0].astype(np.int64)
    assert np.array_equal(np.sort(ids), np.arange(3000))
    acc, pot = np.empty((3000, 3)), np.empty(3000)
    acc[ids], pot[ids] = tab[:, 1:4], tab[:, 4]
    ref_acc, ref_pot = pm_forces(r["pos"], r["mass"],
                                 Periodic(1.0, n_mesh, order=order, interlace=interlace))
    assert np.abs(acc - ref_acc).max() < 1e-12 * np.abs(ref_acc).max()
    assert np.abs(pot - ref_pot).max() < 1e-12 * np.abs(ref_pot).max()
    planes = r["windows"][:, 1]
    if split == "x":
        assert (planes < n_mesh // k + 6).all(), planes
    elif split == "mixed":
        assert (planes == n_mesh).all(), planes
    else:
        assert planes[0] == 0 and (planes[1:] == n_mesh).all(), planes


@pytest.mark.parametrize("k, opening", [(1, "geometric"), (2, "geometric"), (2, "relative")])
def test_k_processes_match_ewald(k, opening, reference, periodic_runs):
    """Whole TreePM forces (short + long) on k processes against Ewald, within the bounds
    the one-process call meets (tests/gravity/test_periodic.py); the clump split over
    the corners meets itself through the faces, across the processes' domains.
    Measured (eps = 0): the public call median 3.3e-4, p99 4.1e-3; 2 and 4 processes
    2.9e-4, 4.1e-3 (geometric θ = 0.5) and 9.9e-5, 1.2e-3 (relative, second force)."""
    idx, acc = reference
    short, long_, _ = _by_id(periodic_runs(k, opening))
    err = _rel((short + long_)[idx], acc)
    pos, mass = periodic_set(N)
    api = _rel(accelerations(pos, mass, 0.0, box=1.0, pm_grid=32, theta=0.5,
                             opening="geometric").acc[idx], acc)
    assert np.median(err) < max(1.5 * np.median(api), 5e-4), (np.median(err), np.median(api))
    assert np.percentile(err, 99) < 5e-3, (np.percentile(err, 99), np.percentile(api, 99))


def _state(path: Path) -> tuple[np.ndarray, np.ndarray, float]:
    """(IDs, exact comoving state rows) of a periodic snapshot (one file or a set) and its
    BoxSize."""
    ids, rows = [], []
    for part in snapshot_files(path):
        with h5py.File(part, "r") as f:
            ids.append(f["PartType1/ParticleIDs"][:])
            rows.append(f["PartType1/HybridtreeBoxState"][:])
            box = float(f["Header"].attrs["BoxSize"])
    ids, rows = np.concatenate(ids), np.concatenate(rows)
    order = np.argsort(ids)
    return ids[order], rows[order], box


def test_a_box_runs_on_two_processes_as_on_one(tmp_path):
    """A 16³ box from z = 49 to 0 in 16 steps on one process and on two (one file per
    process): the same particles at z = 30 to far below the spacing; a restart of the
    two-process set there on one process reaches z = 9 where the one-process run does;
    and what travels between the two slabs stays a layer at their faces.  Measured:
    9e-10 and 3e-8 of the spacing at most.  About 50 s on 2 cores (three runs under
    mpiexec, 16 steps of 16³ each): the runs go on to z = 0 because the exchange is
    checked up to the clustered box (72 % of the particles travel then, against the
    bound of 80 %; a particle wrapped across a face before it changed domain made 94 %
    travel at the end: the fault this part of the test was written for).  The fourth
    run (--overwrite, fewer snapshots) takes 4 steps: it checks which files stay."""
    cfg = tmp_path / "box.toml"
    cfg.write_text((ROOT / "configs" / "cosmo_box_small.toml").read_text())
    common = ["--set", "ics.n_grid=16", "--set", "cosmology.steps=16", "--set",
              "cosmology.z_end=0", "--set", "output.redshifts=30, 9", "--set",
              "gravity.pm_grid=64", "--set", "output.diag_every=4", "--set",
              "output.power_spectrum=true", "--quiet"]
    ok(hybridtree(1, ["run", str(cfg), *common, "--set", "output.dir=one"], tmp_path))
    ok(hybridtree(2, ["run", str(cfg), *common, "--set", "output.dir=two", "--set",
                      'output.snapshot_files="per_process"'], tmp_path))
    i1, s1, box = _state(tmp_path / "one" / "snapshot_0001.hdf5")
    parts = sorted((tmp_path / "two").glob("snapshot_0001.*.hdf5"))
    assert [p.name for p in parts] == ["snapshot_0001.0.hdf5", "snapshot_0001.1.hdf5"]
    i2, s2, box2 = _state(parts[0])
    assert np.array_equal(i1, i2) and np.array_equal(i1, np.arange(1, 16 ** 3 + 1))
    spacing = box / 16
    assert box2 == box

    def moved(a, b):
        return np.abs(np.mod(a[:, :3] - b[:, :3] + box / 2, box) - box / 2).max()

    assert moved(s1, s2) < 1e-6 * spacing, moved(s1, s2) / spacing
    ok(hybridtree(1, ["run", "--restart", str(parts[1]), "--set", "output.dir=again",
                      "--quiet"], tmp_path))
    _, z9, _ = _state(tmp_path / "one" / "snapshot_0002.hdf5")
    i3, again, _ = _state(tmp_path / "again" / "snapshot_0002.hdf5")
    assert np.array_equal(i1, i3)
    assert moved(z9, again) < 1e-5 * spacing, moved(z9, again) / spacing
    # two slabs: what travels lies within r_cut = 0.137 L of their faces (55 % of the
    # particles at first, 72 % once clustered; measured).  A particle wrapped across a
    # face before it changed domain once stretched its process's box over the whole
    # box: 94 % travelled at the end
    rows = read_diagnostics(tmp_path / "two" / "diagnostics.csv")[1:]
    sent = [float(r["let_soft_entries"]) for r in rows]
    assert len(sent) == 4 and max(sent) < 0.8 * 16 ** 3, sent
    # P(k) beside every snapshot (output.power_spectrum), as `hybridtree pk` gives it,
    # from the gathered file and from the two-file set alike (at z = 0 the runs' 1e-9
    # differences have grown: 4e-5 of P measured)
    for n, rtol in enumerate((1e-6, 1e-6, 1e-6, 1e-3)):
        one, two = (np.loadtxt(tmp_path / run / f"powerspec_{n:04d}.txt") for run in
                    ("one", "two"))
        assert np.allclose(one, two, rtol=rtol, atol=0), n
    ps, _ = snapshot_power(tmp_path / "one" / "snapshot_0003.hdf5")
    assert np.allclose(one[:, 1], ps.power, rtol=1e-7, atol=0)
    assert not (tmp_path / "again" / "powerspec_0001.txt").exists()    # the restart's own start
    # they belong to their snapshots: --overwrite with fewer snapshots leaves none stale
    # (4 steps are enough for that: the first and last snapshot; with `_companion` blind
    # to powerspec_NNNN.txt the stale 0002 and 0003 stayed and this failed)
    ok(hybridtree(1, ["run", str(cfg), *common, "--set", "output.dir=one", "--set",
                      "output.redshifts=", "--set", "cosmology.steps=4", "--overwrite"],
                  tmp_path))
    assert sorted(p.name for p in (tmp_path / "one").glob("powerspec_*")) == \
        ["powerspec_0000.txt", "powerspec_0001.txt"]
    for run in ("one", "two"):          # the mesh's seconds are a phase of their own
        rows = read_diagnostics(tmp_path / run / "diagnostics.csv")[1:]
        assert all(float(r["t_pm"]) > 0 for r in rows)


def test_a_mesh_too_small_for_its_slabs_is_refused_once(tmp_path):
    """Five processes cannot share an 8³ mesh in slabs (two planes each at least): one
    clear line, exit status 2, no output folder."""
    cfg = tmp_path / "box.toml"
    cfg.write_text((ROOT / "configs" / "cosmo_box_small.toml").read_text())
    proc = hybridtree(5, ["run", str(cfg), "--set", "ics.n_grid=8", "--set",
                          "gravity.pm_grid=8", "--set", "gravity.asmth=0.5", "--set",
                          "gravity.rcut=2", "--set", "output.dir=out", "--quiet"], tmp_path)
    assert proc.returncode == 2, proc.stderr[-2000:]
    assert proc.stderr.count("hybridtree: error:") == 1, proc.stderr
    assert "pm_grid >= 10" in proc.stderr and "Traceback" not in proc.stderr
    assert not (tmp_path / "out").exists()
