"""scripts/model/let_model.py: its vectorised LET counts are the reference selection's counts.

The reference is what an MPI run does (hybridtree/parallel/forces.py): every process
builds its tree with ``build_tree`` in the global cube and calls ``select_let`` for every
other process's particle box.  The script must count exactly the same cells and
particles without calling it.
"""

import json
import sys
from pathlib import Path

import numpy as np
import pytest

from hybridtree import ics
from hybridtree.parallel.domain import grid_shape
from hybridtree.parallel.forces import global_cube
from hybridtree.parallel.let import LET_DTYPE, box_distance2, select_let
from hybridtree.gravity.tree import build_tree

SCRIPTS = Path(__file__).resolve().parents[2] / "scripts" / "model"
sys.path.insert(0, str(SCRIPTS))

import let_model as lm  # noqa: E402

N, K = 20_000, 8


def _reference(prep: lm.Prepared, k: int, seed: int) -> dict:
    """Count matrices the slow way: the library's owner(), build_tree, select_let."""
    domains = lm.decompose_offline(prep.pos, k, 2000, seed + k)
    own = domains.owner(prep.pos)
    parts = [prep.pos[own == r] for r in range(k)]
    boxes = np.stack([np.stack([p.min(axis=0), p.max(axis=0)]) for p in parts])
    cube = global_cube(boxes)
    assert np.array_equal(cube.corner, prep.cube.corner) and cube.side == prep.cube.side
    out = {name: np.zeros((k, k), np.int64) for name in lm.MATRICES}
    for s in range(k):
        tree = build_tree(parts[s], np.full(len(parts[s]), 1.0 / prep.n), theta=0.5,
                          n_leaf=16, cube=cube, multipole="monopole")
        for r in range(k):
            if r == s:
                continue
            lo, hi = boxes[r]
            cells, idx = select_let(tree, lo, hi)
            out["soft_cells"][s, r], out["soft_parts"][s, r] = len(cells), len(idx)
            cells, idx = select_let(tree, lo, hi, prep.r_out)
            out["hard_cells"][s, r], out["hard_parts"][s, r] = len(cells), len(idx)
            r2 = prep.r_out ** 2
            out["tight_cells"][s, r] = int(np.sum(box_distance2(lo, hi, tree.com[cells]) <= r2))
            out["tight_parts"][s, r] = int(np.sum(box_distance2(lo, hi, tree.pos[idx]) <= r2))
    return out


@pytest.mark.parametrize("model", lm.MODELS)
def test_counts_equal_select_let(model):
    prep = lm.prepare(model, N, seed=3)
    counts = lm.count_all(prep, K, seed=0, jobs=1)
    ref = _reference(prep, K, seed=0)
    for name in lm.MATRICES:
        assert np.array_equal(counts[name], ref[name]), name
    # not a vacuous comparison: every pair exchanges something, hard LETs are smaller
    assert (ref["soft_cells"] + ref["soft_parts"] + np.eye(K, dtype=np.int64) > 0).all()
    assert 0 < ref["hard_cells"].sum() + ref["hard_parts"].sum() < \
        ref["soft_cells"].sum() + ref["soft_parts"].sum()
    assert counts["local"].sum() == N


def test_counts_in_box_chunks_and_workers_agree(monkeypatch):
    """Threads, small frontier chunks and forked workers give the same particles and
    counts."""
    monkeypatch.setattr(lm, "CHUNK", 1000)          # 8 random streams
    prep = lm.prepare("plummer", 8000, seed=5)
    again = lm.prepare("plummer", 8000, seed=5, jobs=3)
    assert np.array_equal(prep.pos, again.pos) and np.array_equal(prep.keys, again.keys)
    one = lm.count_all(prep, 16, jobs=1)
    two = lm.count_all(prep, 16, jobs=2)
    for name in lm.MATRICES:
        assert np.array_equal(one[name], two[name]), name
    o = np.argsort(prep.keys[:2000], kind="stable")
    tree = lm.sender_tree(prep.keys[o], prep.pos[o], np.full(2000, 1 / 8000), prep.cube)
    lo = np.array([[0.1, 0.1, 0.1], [-1.0, -1.0, -1.0], [0.5, -0.2, 0.0]])
    hi = lo + 0.3
    a = lm.count_let(tree, lo, hi, 0.05)
    b = lm.count_let(tree, lo, hi, 0.05, max_pairs=1)      # one box per chunk
    assert np.array_equal(a.cells, b.cells) and np.array_equal(a.parts, b.parts)
    assert np.array_equal(a.tight_parts, b.tight_parts) and a.tests == b.tests
    soft, hard = lm.count_lets(tree, lo, hi, 0.05)
    assert np.array_equal(hard.parts, a.parts) and hard.tests <= soft.tests
    assert np.array_equal(soft.parts, lm.count_let(tree, lo, hi).parts)


def test_count_on_a_pre_order_octree():
    """count_lets on build_tree's own (pre-order) tree gives select_let's sizes."""
    pos = lm.halo_sat_positions(6000, seed=7)
    tree = build_tree(pos, np.full(len(pos), 1 / 6000), theta=0.5, n_leaf=16)
    lo = np.array([[0.2, 0.0, -0.1], [4.8, -0.3, -0.3], [-3.0, -3.0, -3.0], [0.0, 0.0, 0.0]])
    hi = lo + np.array([[0.5, 0.5, 0.5], [0.6, 0.6, 0.6], [1.0, 2.0, 1.0], [0.0, 0.0, 0.0]])
    soft, hard = lm.count_lets(lm.let_tree_from_octree(tree), lo, hi, 0.05, max_pairs=2000)
    for b in range(len(lo)):
        cells, idx = select_let(tree, lo[b], hi[b])
        assert (soft.cells[b], soft.parts[b]) == (len(cells), len(idx))
        cells, idx = select_let(tree, lo[b], hi[b], 0.05)
        assert (hard.cells[b], hard.parts[b]) == (len(cells), len(idx))


def test_owners_equal_domains_owner():
    pos = lm.plummer_positions(5000, seed=2)
    for k in (8, 12, 30):
        d = lm.decompose_offline(pos, k, 200, seed=k)
        assert d.shape == grid_shape(k)
        assert np.array_equal(lm.owners(d, pos), d.owner(pos))


def _ks(sample: np.ndarray, cdf) -> float:
    """Kolmogorov-Smirnov distance of ``sample`` from the distribution ``cdf``."""
    x = np.sort(sample)
    f = cdf(x)
    m = len(x)
    return float(max(np.max(np.arange(1, m + 1) / m - f), np.max(f - np.arange(m) / m)))


def test_positions_follow_the_ics_distributions():
    n = 20_000
    tol = 1.63 / np.sqrt(n) * 1.5          # KS at 1 % significance, with room for the COM shift
    b = 3 * np.pi / 16
    r = np.linalg.norm(lm.plummer_positions(n, seed=4), axis=1) / b
    m100 = (1e4 / (1 + 1e4)) ** 1.5
    assert _ks(r, lambda x: (x * x / (1 + x * x)) ** 1.5 / m100) < tol
    r_ics = np.linalg.norm(ics.plummer(n, seed=4)[0], axis=1) / b
    assert _ks(r_ics, lambda x: (x * x / (1 + x * x)) ** 1.5 / m100) < tol
    m_cut = 1 / (1 + 1 / 100) ** 2
    r = np.linalg.norm(lm.hernquist_positions(n, seed=4), axis=1)
    assert _ks(r, lambda x: (x / (1 + x)) ** 2 / m_cut) < tol
    assert np.allclose(lm.plummer_positions(n, seed=4).mean(axis=0), 0.0, atol=1e-12)


def test_halo_with_satellite():
    n = 20_000
    pos = lm.halo_sat_positions(n, seed=4)
    assert pos.shape == (n, 3) and np.allclose(pos.mean(axis=0), 0.0, atol=1e-12)
    sat = pos[-2000:]
    off = np.median(sat, axis=0) - np.median(pos[:-2000], axis=0)
    assert np.allclose(off, [5.0, 0.0, 0.0], atol=0.1)
    assert np.max(np.linalg.norm(sat - np.median(sat, axis=0), axis=1)) < 1.05
    p, v, m = lm.halo_sat(4000, seed=4)
    assert m.sum() == pytest.approx(1.0)
    assert np.allclose(p.mean(axis=0), 0.0, atol=1e-12)
    assert np.allclose(v.mean(axis=0), 0.0, atol=1e-12)
    # the satellite's bulk velocity relative to the halo: the circular speed, along y
    dv = v[-400:].mean(axis=0) - v[:-400].mean(axis=0)
    assert dv[1] == pytest.approx(lm.satellite_speed(), rel=0.1)
    assert lm.satellite_speed() == pytest.approx(0.357, abs=0.001)


def test_model_arithmetic():
    assert lm.ENTRY_BYTES == 32          # x, y, z, m as float64 (device_let.let_rows)
    for n, t in lm.H100_STEP_S:
        assert lm.step_time(n) == pytest.approx(t)
    assert lm.step_time(2 ** 23) == pytest.approx(np.sqrt(0.0400 * 0.1322))
    # two processes, 1000 particles each; 0 sends 500 entries to 1, 1 sends 300 to 0
    z = np.zeros((2, 2), np.int64)
    counts = {"k": 2, "local": np.array([1000, 1000]), "shape": [2, 1, 1],
              "soft_cells": np.array([[0, 100], [50, 0]]),
              "soft_parts": np.array([[0, 400], [250, 0]]),
              "hard_cells": z, "hard_parts": np.array([[0, 100], [0, 0]]),
              "tight_cells": z, "tight_parts": z}
    net = lm.Network(bandwidth=1e6, latency=1e-3)
    p = lm.predict(2000, counts, net, n_hard=4, hard_fraction=0.5)
    assert lm.predict(2000, counts, net, 4, 0.5, compute="local")["comp_full"] == \
        pytest.approx(lm.step_time(1000))
    comm = 500 * 32 / 1e6 + 1e-3                  # process 0 sends / process 1 receives 500
    assert p["comm_soft"] == pytest.approx(comm)
    # the slowest, process 1: its 1000 particles' step, and one more build of 1000 + 500
    b = lm.BUILD_S_PER_PARTICLE
    assert p["comp_full"] == pytest.approx(lm.step_time(1000) + 1500 * b)
    assert p["comm_hard"] == pytest.approx(100 * 32 / 1e6 + 1e-3)
    assert p["comp_hard"] == pytest.approx(0.5 * lm.step_time(1000) + 1100 * b)
    assert p["t_normal"] == pytest.approx(4 * (comm + lm.step_time(1000) + 1500 * b))
    assert p["eff_normal"] == pytest.approx(4 * lm.step_time(2000) / (2 * p["t_normal"]))
    t1 = lm.step_time(2000) * (1 + 4 * 0.5)
    assert p["eff_hybrid"] == pytest.approx(t1 / (2 * p["t_hybrid"]))


def test_quick_run_writes_json_and_table(tmp_path, capsys):
    out = tmp_path / "let.json"
    rows = lm.main(["--n", "4096", "--procs", "8", "--models", "plummer", "--jobs", "1",
                    "--out", str(out)])
    text = capsys.readouterr().out
    assert "| set | N | K |" in text
    data = json.loads(out.read_text())
    assert data["header"]["entry_bytes"] == 32
    assert len(data["rows"]) == len(rows) == 1
    row = data["rows"][0]
    assert 0 < row["tight_over_soft"] <= row["hard_over_soft"] < 1
    assert {p["hard_let"] for p in row["predictions"]} == {"hard", "tight"}
