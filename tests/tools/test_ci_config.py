"""The suite's own configuration (docs/testing.md): the workers of setup.cfg come with the
test extra, and the long tests are handed out first."""

import configparser
import shlex
from pathlib import Path

import pytest

from tests import conftest

ROOT = Path(__file__).resolve().parents[2]


def test_the_workers_of_addopts_come_with_the_test_extra():
    """`pytest` as the README says runs wherever `pip install -e ".[test]"` was done: an
    `-n` in addopts needs pytest-xdist in the test extra."""
    cfg = configparser.ConfigParser()
    cfg.read(ROOT / "setup.cfg")
    addopts = shlex.split(cfg["tool:pytest"].get("addopts", ""))
    extra = cfg["options.extras_require"]["test"].split()
    if "-n" in addopts:
        assert any(p.startswith("pytest-xdist") for p in extra), extra


class _Item:
    def __init__(self, name: str, *markers: str) -> None:
        self.name, self.markers, self.fspath = name, set(markers), ROOT / "tests" / "x.py"

    def get_closest_marker(self, name: str):
        return name if name in self.markers else None

    def add_marker(self, marker) -> None:
        self.markers.add(marker.name)


def test_the_long_tests_come_first_the_rest_in_order():
    items = [_Item("a"), _Item("b", "slow"), _Item("c", "mpi"), _Item("d", "oclgrind"),
             _Item("e"), _Item("f", "slow", "mpi")]
    conftest.pytest_collection_modifyitems(items)
    assert [i.name for i in items] == ["b", "d", "f", "a", "c", "e"]


@pytest.mark.parametrize("folder, marked", [("gravity", True), ("io", False)])
def test_the_kernels_folders_are_marked_gpu(folder, marked):
    item = _Item("a")
    item.fspath = ROOT / "tests" / folder / "test_x.py"
    conftest.pytest_collection_modifyitems([item])
    assert ("gpu" in item.markers) == marked
