"""The public many-process call (hybridtree.parallel.parallel_accelerations) is the force
pipeline's driver (hybridtree.gravity.pipeline.drive) through the parallel engine's
backend of host arrays (hybridtree.parallel.host_let.ParallelArrayBackend), as the
one-process calls of arrays are (tests/gravity/test_arrays_pipeline.py); its forces are
the one-process code's and direct summation's to the tree's error.  (That the driver
left every bit as the old host_let_forces wrote it was checked by hand on 1 and 3
processes: acc, pot, interactions, LET volumes; the runs of tools/same_snapshots.py.)"""

import numpy as np
import pytest

from hybridtree.gravity import accelerations, split_accelerations
from hybridtree.gravity.api import direct_reference
from hybridtree.gravity.splitting import Changeover
from hybridtree.ics import plummer
from hybridtree.parallel import Comm, parallel_accelerations
from hybridtree.parallel.host_let import ParallelArrayBackend
from tests.helpers import rel_err

STAGES = ("sources", "tree", "exchange", "walk_active", "walk", "long_range", "reduce_part",
          "received", "reduce")
SPLIT = Changeover(0.01, 0.1)


def _recorded(monkeypatch) -> list[str]:
    """The stages every ParallelArrayBackend runs, in order (with the part walked)."""
    calls = []
    for stage in STAGES:
        def wrap(self, *args, _stage=stage, _run=getattr(ParallelArrayBackend, stage)):
            part = [a.name for a in args[1:2] if hasattr(a, "walk_key")]
            calls.append(":".join([_stage, *part]))
            return _run(self, *args)
        monkeypatch.setattr(ParallelArrayBackend, stage, wrap)
    return calls


@pytest.mark.parametrize("overlap, part", [(False, "full"), (True, "full"), (False, "hard"),
                                           (True, "soft")])
def test_parallel_accelerations_run_the_drivers_stages(overlap, part, monkeypatch):
    """One process (no MPI): the driver's stages in order, whatever the part and the way
    the LETs travel; the forces those of the one-process tree (the same cells: rounding
    apart) and of float64 direct summation to the tree's error (θ = 0.5, monopoles:
    median 4e-4 measured)."""
    calls = _recorded(monkeypatch)
    pos, _, mass = plummer(1500, seed=3)
    f = parallel_accelerations(Comm(None), pos, mass, 0.01, 0.5, multipole="monopole",
                               split=SPLIT, part=part, overlap=overlap)
    assert calls == ["sources", "tree", "exchange", f"walk:{part}", f"reduce_part:{part}",
                     "received", "reduce"]
    assert f.acc.shape == (1500, 3) and f.pot.shape == (1500,) and f.interactions > 0
    assert f.let_sent == {"cells": 0, "particles": 0, "bytes": 0}
    assert ("walk_local" in f.timings) == overlap and f.timings["walk"] > 0
    if part == "full":
        one = accelerations(pos, mass, 0.01, theta=0.5, multipole="monopole")
    else:
        one = split_accelerations(pos, mass, 0.01, SPLIT, (part,), multipole="monopole")[part]
    scale = np.abs(one.acc).max()
    np.testing.assert_allclose(f.acc, one.acc, rtol=1e-6, atol=1e-6 * scale)
    if part == "full":
        ref, ref_pot = direct_reference(pos, mass, 0.01)
        err = rel_err(f.acc, ref)
        assert np.median(err) < 1e-3 and np.percentile(err, 99) < 1e-2
        assert np.median(np.abs(f.pot / ref_pot - 1)) < 1e-3


def test_a_process_without_particles_gets_empty_forces():
    """No local particles: a job all the same (the exchange is collective), empty arrays."""
    for overlap in (False, True):
        f = parallel_accelerations(Comm(None), np.zeros((0, 3)), np.zeros(0), 0.01,
                                   overlap=overlap)
        assert f.acc.shape == (0, 3) and f.pot.shape == (0,) and f.interactions == 0
