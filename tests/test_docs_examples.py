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
