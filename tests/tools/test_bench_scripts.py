"""The benchmark scripts that docs/benchmarks.md quotes still run (small N, CPU device):
every script of scripts/bench/ and scripts/model/plot_scaling.py in its small mode."""

import json
import sys
from pathlib import Path

import numpy as np
import pytest

SCRIPTS = Path(__file__).resolve().parents[2] / "scripts"
sys.path.insert(0, str(SCRIPTS / "model"))
sys.path.insert(0, str(SCRIPTS / "bench"))

import force  # noqa: E402
import plot_scaling  # noqa: E402


def test_force_targets_prints_the_target_table(tmp_path, capsys):
    out = tmp_path / "b.json"
    force.main(["--targets", "--device", "cpu", "--cpu-device", "cpu", "--quick", "--repeat",
                "1", "--sample", "50", "--json", str(out)])
    text = capsys.readouterr().out
    assert "| target | measured | met? |" in text
    data = json.loads(out.read_text())
    names = [t["target"] for t in data["targets"]]
    assert any(n.startswith("direct kernel") for n in names)
    assert any(n.startswith("build share") for n in names)
    tree = [r for r in data["rows"] if r["method"] == "tree/device"]
    assert tree and all(r["median_err"] < 1e-3 for r in tree)


def test_crossover_of_two_power_laws(tmp_path):
    # direct ~ N^2, tree ~ N: equal where 1e-9 N^2 = 1e-5 N, at N = 1e4
    lines = []
    for n in (1000, 4000, 16000, 64000):
        tree, direct = 1e-5 * n, 1e-9 * n * n
        lines.append(f"{n} tree/device 0.50 monopole - 0:0 gpu 0.001 {tree} {tree} 1 1 1 1 1 1")
        lines.append(f"{n} direct - - False 0:0 gpu - {direct} {direct} 1 1 1 1 - 1")
    path = tmp_path / "t.txt"
    path.write_text("# header\n" + "\n".join(lines) + "\n")
    rows = plot_scaling.read_rows([str(path)])
    x = plot_scaling.crossover({n: t[1] for n, t in rows["tree"].items()},
                               {n: t[1] for n, t in rows["direct, plain"].items()})
    assert x == pytest.approx(1e4, rel=1e-9)


def test_force_rows_quick(tmp_path, capsys):
    """The rows mode: tree and both direct variants, errors against float64."""
    out = tmp_path / "f.json"
    force.main(["--device", "cpu", "--n", "3000", "--direct-n", "2048", "--repeat", "1",
                "--sample", "100", "--build", "host", "device", "--json", str(out)])
    rows = json.loads(out.read_text())["rows"]
    assert {r["method"] for r in rows} == {"tree/host", "tree/device", "direct"}
    assert all(r["median_err"] < 1e-3 for r in rows)
    assert {r["precise"] for r in rows if r["method"] == "direct"} == {True, False}


def test_bench_memory_runs_and_its_particles_are_plummer(capsys):
    import common
    import memory
    pos = common.plummer_positions(100_000, seed=3)
    r = np.linalg.norm(pos, axis=1)
    a = 3 * np.pi / 16           # Hénon units: the half-mass radius is 1.305 a
    assert abs(np.median(r) / (a / np.sqrt(0.4995 ** (-2 / 3) - 1)) - 1) < 0.02
    assert abs(pos.mean(axis=0)).max() < 0.02
    memory.main(["--device", "cpu", "--n", "3000"])
    assert "| 3000 | yes |" in capsys.readouterr().out


@pytest.mark.slow
def test_bench_step_quick_runs_real_steps(tmp_path, capsys):
    """scripts/bench/step.py runs (issue 17's benchmark) runs real `hybridtree run` steps and
    reads their per-step breakdown from diagnostics.csv."""
    import step
    out = tmp_path / "s.json"
    step.main(["runs", "--quick", "--device", "cpu", "--json", str(out), "--tmp", str(tmp_path)])
    text = capsys.readouterr().out
    assert "| N | scheme | step s | build | walk |" in text
    assert "| N | public API caller s |" in text
    rows = json.loads(out.read_text())["rows"]
    runs = {r["scheme"]: r for r in rows if r["kind"] == "run"}
    assert set(runs) == {"plain-mono", "hybrid-mono"}
    for r in runs.values():
        assert r["error"] is None and r["reports"] == 3 and r["step_s"] > 0
        assert abs(r["energy_error"]) < 1e-3
        for k in ("t_build", "t_walk", "t_integrate", "t_reduce"):
            assert r[k] is not None and r[k] > 0, k
        assert r["step_over_force"] >= 1.0
    api = next(r for r in rows if r["kind"] == "api")
    assert api["caller_s"] > 0 and api["internal_total_s"] > 0 and api["ratio"] >= 1.0
    assert not any(r["kind"] == "peer" for r in rows)         # --quick never runs the peer


def test_step_api_times_real_steps(capsys):
    import step
    step.main(["api", "--quick", "--device", "cpu"])
    row = json.loads(capsys.readouterr().out.strip().splitlines()[-1])
    assert row["n"] == 20000 and row["finite"]
    # the caller's clock around step() holds the run's own per-step wall (and little else)
    assert row["step_s_diagnostics"] <= row["step_s_caller"] * 1.5
    assert row["step_s_caller"] > 0 and abs(row["energy_error"]) < 1e-3


def test_bench_timesteps_measures_all_three_parts(capsys, tmp_path):
    import timesteps
    timesteps.main([
        "errors", "steps", "openings", "--device", "cpu",
        "--n", "3000", "--sample", "200", "--theta", "0.5", "--alpha", "0.002",
        "--dt", "0.25", "--t-end", "0.5", "--shared-from", "3", "--run-steps", "1",
        "--json", str(tmp_path / "rows.jsonl")])
    rows = [json.loads(line) for line in (tmp_path / "rows.jsonl").read_text().splitlines()]
    assert rows == [json.loads(line) for line in capsys.readouterr().out.splitlines()
                    if line.startswith("{")]
    errors = {(r["model"], r["multipole"], r["opening"]): r for r in rows
              if r["what"] == "error"}
    assert len(errors) == 8 and all(0 < r["p99"] < 0.05 for r in errors.values())
    block = next(r for r in rows if r["what"] == "block")
    assert sum(b["particles"] for b in block["bins"]) == 3000
    assert 0 < block["work_vs_deepest"] <= 1
    shared = [r for r in rows if r["what"] == "shared"]
    assert [r["k"] for r in shared] == list(range(3, max(b["bin"] for b in block["bins"]) + 1))
    assert {(r["model"], r["opening"]) for r in rows if r["what"] == "run"} == {
        (m, o) for m in ("plummer", "cusp") for o in ("geometric", "relative")}


def test_step_hybrid_compares_hybrid_with_normal(capsys):
    import step
    step.main(["hybrid", "--n", "3000", "--device", "cpu", "--t-end", "0.03125", "--json"])
    res = json.loads(capsys.readouterr().out.strip().splitlines()[-1])
    assert res["normal_steps"] == 8 and res["soft_steps"] == 2
    assert res["t_normal_s"] > 0 and res["t_hybrid_s"] > 0
    assert 0 < res["hard_soft_ratio"] and res["soft_interactions"] > 0
    assert abs(res["energy_error_normal"]) < 1e-3 and abs(res["energy_error_hybrid"]) < 1e-3


def test_bench_transfer_moves_what_a_force_moves(capsys, monkeypatch):
    import transfer
    # the script sets the policy per way (and its runtime's copy options): put it back
    # for the tests after this one
    monkeypatch.setenv("HYBRIDTREE_STAGING", "auto")
    monkeypatch.setattr(sys, "argv", ["transfer.py", "--device", "cpu", "--n", "4096",
                                      "--chunk-mb", "1", "--repeat", "1"])
    transfer.main()
    text = capsys.readouterr().out
    for way in ("pageable", "staged 1 MB", "dma (pinned)", "numpy copy"):
        assert f"N=     4096 {way}" in text


def _older_copy(tmp_path: Path) -> Path:
    """A stand-in for scripts/gpu_round.sh's build/old: a hybridtree package that says so."""
    pkg = tmp_path / "old" / "hybridtree"
    pkg.mkdir(parents=True)
    (pkg / "__init__.py").write_text("WHERE = 'old'\n")
    (pkg / "__main__.py").write_text("import hybridtree\nprint(hybridtree.WHERE)\n")
    return pkg.parent


def test_children_and_scripts_take_the_hybridtree_of_pythonpath(tmp_path):
    """A round's `code old` puts an older copy on PYTHONPATH: `python -m hybridtree`
    children (step.py, galaxy.py, cosmo.py) and the scripts themselves must import it,
    not the checkout (rounds 100-122 compared the checkout with itself)."""
    import subprocess

    import common
    old = _older_copy(tmp_path)
    env = common.child_env(path_first=[str(old)])     # as if PYTHONPATH named it
    run = [sys.executable, "-m", "hybridtree"]
    child = subprocess.run(run, env=env, cwd=common.CHILD_CWD, capture_output=True, text=True)
    assert child.stdout.strip() == "old", child.stderr
    # in the checkout `-m` takes the checkout's package first, whatever PYTHONPATH says
    here = subprocess.run(run, env=env, cwd=common.ROOT, capture_output=True, text=True)
    assert here.stdout.strip() != "old"
    # a script importing common, then hybridtree
    code = (f"import sys; sys.path.insert(0, {str(SCRIPTS / 'bench')!r}); import common; "
            "import hybridtree; print(hybridtree.WHERE)")
    script = subprocess.run([sys.executable, "-c", code], env={**common.child_env(),
                            "PYTHONPATH": str(old)}, cwd=tmp_path, capture_output=True,
                            text=True)
    assert script.stdout.strip() == "old", script.stderr


def test_bench_pareto_compares_block_and_shared_runs_with_a_converged_one(tmp_path, capsys):
    import pareto
    rows = pareto.main(["cusp", "--device", "cpu", "--n", "1000", "--t-end", "0.125",
                        "--eta", "0.4", "0.2", "--shared", "1", "2", "--ref", "3",
                        "--tracers", "50", "--json", str(tmp_path / "p.jsonl"),
                        "--plot", str(tmp_path / "p.png")])
    assert [r["what"] for r in rows] == ["reference", "block", "block", "shared", "shared",
                                         "summary", "summary"]
    ref, runs = rows[0], rows[1:5]
    assert ref["tracer_median"] == 0 and ref["radii_error"] == 0 and ref["steps"] == 16
    assert all(r["tracer_median"] > 0 and 0 < r["energy_error_max"] < 1e-2 for r in runs)
    assert all(r["energy_error_max"] >= abs(r["energy_error"]) for r in runs)
    assert sum(b["particles"] for b in rows[1]["bins"]) == 1000
    assert (tmp_path / "p.png").stat().st_size > 0
    assert len((tmp_path / "p.jsonl").read_text().splitlines()) == 7
    again = pareto.main(["--from", str(tmp_path / "p.jsonl"), "--plot",
                         str(tmp_path / "q.png")])
    assert again == json.loads(json.dumps(rows))


def test_bench_pareto_interpolates_the_shared_front_in_log_log():
    """A shared front of error ∝ wall^-2 (10 s at 1e-3, 20 s at 2.5e-4, 40 s at 6.25e-5):
    an error of 5e-4 takes 10 √2 s, between the first two; one outside the front, none."""
    import pareto
    front = [(40.0, 6.25e-5), (10.0, 1e-3), (20.0, 2.5e-4)]
    got = pareto.interpolated_wall(front, 5e-4)
    assert got["wall_s"] == pytest.approx(10 * 2 ** 0.5, rel=1e-12)
    assert got["between"] == [10.0, 20.0]
    assert pareto.interpolated_wall(front, 1.25e-4)["between"] == [20.0, 40.0]
    assert pareto.interpolated_wall(front, 2e-3) is None
    assert pareto.interpolated_wall(front, 1e-5) is None


def test_bench_pareto_keeps_the_converged_run_for_later_calls(tmp_path):
    """--ref-file: the first call keeps its converged run, a later one compares its runs
    with it (no shared runs: --shared with none) as the first call did; a call of another
    span is refused."""
    import pareto
    common = ["cusp", "--device", "cpu", "--n", "1000", "--ref", "3", "--tracers", "50",
              "--ref-file", str(tmp_path / "ref.npz")]
    first = pareto.main(common + ["--t-end", "0.125", "--eta", "0.4", "--shared", "2"])
    later = pareto.main(common + ["--t-end", "0.125", "--eta", "0.4", "--shared"])
    assert [r["what"] for r in later] == ["reference", "block", "summary"]
    assert later[0]["from"] == str(tmp_path / "ref.npz")
    assert {k: v for k, v in later[0].items() if k != "from"} == \
        json.loads(json.dumps(first[0]))
    for key in ("tracer_median", "tracer_p90", "radii_error", "energy_error_max"):
        assert later[1][key] == first[1][key] and first[1][key] > 0
    with pytest.raises(SystemExit, match="kept for"):
        pareto.main(common + ["--t-end", "0.25", "--eta", "0.4", "--shared"])


def test_run_child_gives_the_childs_row_or_why_it_failed(tmp_path, capsys):
    """common.run_child (billion.py's and run_memory.py's parent loop): the child's last
    stdout line as its row, with the device peak (None without nvidia-smi) and the wall
    time; a failing child's stderr tail and a child past its time as failed rows."""
    import common
    child = tmp_path / "child.py"
    child.write_text(
        "import json, sys, time\n"
        "n, rest = int(sys.argv[2]), sys.argv[3:]\n"
        "if 'sleep' in rest: time.sleep(30)\n"
        "if 'fail' in rest: sys.exit('the child failed: ' + 'x' * 50)\n"
        "print('a line first')\n"
        "print(json.dumps({'n': n, 'rest': rest}))\n")
    row = common.run_child(str(child), 7, ["a"], "cpu", 60, None)
    assert row["n"] == 7 and row["rest"] == ["a", "--device", "cpu"]
    assert row["device_peak_mib"] is None and row["wall_s"] > 0
    row = common.run_child(str(child), 8, ["fail"], None, 60, None, tail=20)
    assert row == {"n": 8, "failed": "x" * 19 + "\n"}
    row = common.run_child(str(child), 9, ["sleep"], None, 0.5, None)
    assert row == {"n": 9, "failed": "timeout"}
    assert "N = 8: failed" in capsys.readouterr().out
