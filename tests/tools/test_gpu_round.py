"""scripts/gpu_round.sh keeps every recorded round runnable: the runner and each round's
file (scripts/rounds/NNN.sh) parse, and a dry run prints a round's commands without a GPU."""

import os
import subprocess
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
ROUNDS = sorted((ROOT / "scripts" / "rounds").glob("[0-9][0-9][0-9].sh"))


def _dry(tmp_path: Path, *args: str) -> subprocess.CompletedProcess:
    env = dict(os.environ, DRY="1", OUT=str(tmp_path / "out"))
    return subprocess.run(["bash", "scripts/gpu_round.sh", *args], cwd=ROOT, env=env,
                          capture_output=True, text=True, timeout=60)


def test_the_runner_and_every_round_parse():
    assert len(ROUNDS) >= 124
    for path in [ROOT / "scripts" / "gpu_round.sh", *ROUNDS]:
        check = subprocess.run(["bash", "-n", str(path)], capture_output=True, text=True)
        assert check.returncode == 0, f"{path.name}: {check.stderr}"
        if path.parent.name == "rounds":
            assert path.read_text().startswith(f"# round {int(path.stem)}"), path.name


def test_a_dry_run_prints_a_rounds_commands(tmp_path):
    run = _dry(tmp_path, "124")
    assert run.returncode == 0, run.stderr
    lines = [x for x in run.stdout.splitlines() if x.startswith("py runs_")]
    assert len(lines) == 2
    # `code old` puts the older copy first: the round's two runs differ only there
    assert "build/old" in lines[1] and "build/old" not in lines[0]
    assert "scripts/bench/step.py runs --device nvidia --n 4194304 16777216" in lines[0]
    # a round's own arguments reach it (round 42: the variants to run)
    run = _dry(tmp_path, "42", "quad")
    assert "cs_quad" in run.stdout and "cs_mono" not in run.stdout, run.stderr


def test_an_unknown_round_without_arguments_is_refused(tmp_path):
    run = _dry(tmp_path, "9999")
    assert run.returncode == 2
    assert "no round 9999" in run.stderr
