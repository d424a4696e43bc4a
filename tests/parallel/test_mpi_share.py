"""Under mpiexec (MPICH from PyPI, oversubscribed on the CI's two cores): generated
initial conditions are the same bits for any number of processes, and the byte
exchanges (alltoallv, ialltoallv, gather_array) give the same rows when they must split
into messages of at most ``CHUNK_BYTES`` (forced small here) as in one collective."""

import json
import os
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

from hybridtree import ics
from hybridtree.config import validate
from hybridtree.parallel.comm import Comm
from hybridtree.run.simulation import initial_conditions
from hybridtree.config.units import Units

from tests.parallel.mpi_share_worker import gather_rows, rows_for
from tests.helpers import ROOT, mpiexec, once_per_run

pytestmark = pytest.mark.mpi  # every test here starts processes under mpiexec

#: several blocks, slices that straddle block boundaries for K = 2 and 3, a short last
#: block, and a model with fewer particles than processes (empty shares)
SPECS = [{"kind": "plummer", "n": 2 * ics.BLOCK + 18_928, "seed": 3},
         {"kind": "hernquist", "n": 2 * ics.BLOCK + 3, "seed": 9, "r_max": 50.0},
         {"kind": "cold_sphere", "n": ics.BLOCK + 4_464, "seed": 1, "radius": 2.0},
         {"kind": "plummer", "n": 2, "seed": 5}]

#: a cosmological sphere (2LPT from one field, the processes' shares of it): run with
#: SPECS under the same mpiexec runs (tests/cosmo had its own three)
COSMO_SPHERE = {"kind": "cosmo_sphere", "n_grid": 24, "box": 60.0, "radius": 30.0, "seed": 2,
                "lpt": 2, "cosmology": {"enabled": True, "z_start": 30.0}}

#: None: the default CHUNK_BYTES (one collective); the others force point-to-point
#: pieces that cut rows (33 bytes) and fields apart
LIMITS = [None, 4096, 1000, 37]


def run_worker(k: int, mode: str, arg, tmp_path: Path) -> dict:
    out = tmp_path / f"{mode}_{k}.npz"
    env = {**os.environ, "PYTHONPATH": os.pathsep.join(
        [str(ROOT), str(ROOT / "tests"), os.environ.get("PYTHONPATH", "")])}
    cmd = [mpiexec(), "-n", str(k), sys.executable, str(ROOT / "tests" / "parallel" / "mpi_share_worker.py"),
           mode, str(out), json.dumps(arg)]
    proc = subprocess.run(cmd, capture_output=True, text=True, timeout=300, env=env)
    assert proc.returncode == 0, proc.stderr[-3000:]
    return dict(np.load(out))


def bits(a: np.ndarray) -> np.ndarray:
    return np.ascontiguousarray(a).view(np.uint8)


@pytest.fixture(scope="module")
def ics_by_k(tmp_path_factory):
    """The models on 1, 2 and 3 processes: one mpiexec of three, the first k of them on a
    communicator of their own for each k (three starts were most of the time); once a run
    (:func:`tests.helpers.once_per_run`: the module's tests went to both workers)."""
    r = once_per_run(tmp_path_factory, "test_mpi_share.ics_by_k", lambda: run_worker(
        3, "ics_by_k", [*SPECS, COSMO_SPHERE], tmp_path_factory.mktemp("ics")))
    return {k: {name[len(f"k{k}_"):]: v for name, v in r.items() if name.startswith(f"k{k}_")}
            for k in (1, 2, 3)}


@pytest.mark.parametrize("i", range(len(SPECS)))
def test_initial_conditions_are_the_same_bits_for_any_k(ics_by_k, i):
    spec = SPECS[i]
    n = spec["n"]
    settings = validate({"ics": spec})
    serial, _ = initial_conditions(settings, Units(settings.units.length_cm,
                                                   settings.units.mass_g), Comm(None))
    make = getattr(ics, spec["kind"])
    params = {key: v for key, v in spec.items() if key in ("r_max", "radius")}
    pos, vel, mass = make(n, spec["seed"], **params)
    assert np.array_equal(bits(serial.pos), bits(pos)) and np.array_equal(bits(serial.vel),
                                                                           bits(vel))
    for k, r in ics_by_k.items():
        assert np.array_equal(r[f"counts_{i}"], [n * (j + 1) // k - n * j // k
                                                 for j in range(k)])
        assert np.array_equal(r[f"ids_{i}"], np.arange(1, n + 1, dtype=np.uint64))
        for name, ref in (("pos", pos), ("vel", vel), ("mass", mass)):
            assert np.array_equal(bits(r[f"{name}_{i}"]), bits(ref)), (k, name)


def test_a_cosmological_sphere_is_the_same_bits_for_any_number_of_processes(ics_by_k):
    """Every process makes its share of the sphere from the same field: 1, 2 and 3
    processes give the particles of the serial sphere, bit for bit (the runs of
    ``ics_by_k``: in tests/cosmo it ran three of its own, ~7-10 s; with every share but
    the first drawn from seed + 1 on purpose, in cosmo_sphere_share, it fails: (2, 'pos'))."""
    spec, i = COSMO_SPHERE, len(SPECS)
    s = validate({"ics": {k: v for k, v in spec.items() if k != "cosmology"},
                  "cosmology": spec["cosmology"]})
    serial, _ = initial_conditions(s, Units(s.units.length_cm, s.units.mass_g), Comm(None))
    for k, r in ics_by_k.items():
        assert np.array_equal(r[f"ids_{i}"], serial.ids)
        for name in ("pos", "vel", "mass"):
            assert np.array_equal(bits(r[f"{name}_{i}"]), bits(getattr(serial, name))), (k, name)


@pytest.mark.parametrize("k", [1, 3])
def test_exchanges_in_pieces_give_the_same_rows(k, tmp_path):
    r = run_worker(k, "exchange", LIMITS, tmp_path)
    for i in range(len(LIMITS)):
        for dst in range(k):
            expect = bits(np.concatenate([rows_for(src, dst) for src in range(k)]))
            assert np.array_equal(r[f"a_{i}_{dst}"], expect), (LIMITS[i], dst)
            assert np.array_equal(r[f"b_{i}_{dst}"], expect), (LIMITS[i], dst)
            gathered = bits(np.concatenate([gather_rows(src) for src in range(k)]))
            assert np.array_equal(r[f"g_{i}_{dst}"], gathered), (LIMITS[i], dst)
    if k == 3:      # the forced limits did take the point-to-point path
        total = sum(len(rows_for(s, d)) for s in range(3) for d in range(3)) * 33
        assert total > max(x for x in LIMITS if x) and len(r["a_0_1"]) > 0


def test_bad_counts_are_refused():
    with pytest.raises(ValueError, match="counts"):
        Comm(None).alltoallv(np.zeros(3), [4])
    with pytest.raises(ValueError, match="counts"):
        Comm(None).alltoallv(np.zeros(3), [1, 1])
    assert np.array_equal(Comm(None).alltoallv(np.arange(3.0), [2]), [0.0, 1.0])
