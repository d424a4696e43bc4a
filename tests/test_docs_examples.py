"""The Python examples of the user guide run as written (docs/python.md, and the README's
taste of the API), in a fresh folder."""

import re
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]


def python_blocks(path: Path) -> list[str]:
    return re.findall(r"```python\n(.*?)```", path.read_text(encoding="utf-8"), flags=re.S)


def test_every_python_example_of_the_api_page_runs(tmp_path, monkeypatch, capsys):
    monkeypatch.chdir(tmp_path)
    blocks = python_blocks(ROOT / "docs" / "python.md")
    assert len(blocks) >= 3
    for code in blocks:
        exec(compile(code, "docs/python.md", "exec"), {})
    assert (tmp_path / "plummer.hdf5").is_file()
    assert "snapshot_0004.hdf5" in capsys.readouterr().out


def test_the_readme_api_example_runs(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    blocks = [b for b in python_blocks(ROOT / "README.md") if "Simulation(" in b]
    if not blocks:
        pytest.fail("the README shows no hybridtree.Simulation example")
    for code in blocks:
        exec(compile(code, "README.md", "exec"), {})


def run_commands(path: Path) -> list[str]:
    """The ``hybridtree run CONFIG ...`` lines of a page's code blocks (comments, ``--quiet``
    and extra spaces dropped; not ``--restart`` nor MPI launches)."""
    lines = []
    for block in re.findall(r"```[a-z]*\n(.*?)```", path.read_text(encoding="utf-8"), flags=re.S):
        for line in block.splitlines():
            words = [w for w in line.split("#")[0].split() if w != "--quiet"]
            if words[:2] == ["hybridtree", "run"] and "--restart" not in words:
                lines.append(" ".join(words))
    return lines


def output_dir(command: str) -> str:
    """The folder a run command writes: its ``--set output.dir=``, else its config's."""
    import tomllib
    words = command.split()
    for a, b in zip(words, words[1:]):
        if a == "--set" and b.startswith("output.dir="):
            return b.split("=", 1)[1]
    config = tomllib.loads((ROOT / words[2]).read_text())
    return config.get("output", {}).get("dir", "out")


def test_the_run_examples_of_running_md_write_into_folders_of_their_own():
    """Two different example runs into one folder: the second fails (the folder holds a
    run already).  running.md's examples, against each other and against the README's
    and the quickstart's (the same command on two pages is the same run)."""
    own = run_commands(ROOT / "docs" / "running.md")
    others = run_commands(ROOT / "README.md") + run_commands(ROOT / "docs" / "quickstart.md")
    assert len(own) >= 4
    for i, command in enumerate(own):
        for other in own[i + 1:] + others:
            if other != command and "--overwrite" not in command:
                assert output_dir(command) != output_dir(other), (command, other)
