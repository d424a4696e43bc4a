"""The suite's own configuration (docs/testing.md): the workers of setup.cfg come with the
test extra, and the long tests are handed out first."""

import configparser
import shlex
from pathlib import Path
from types import SimpleNamespace

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
        self.nodeid = f"tests/x.py::{name}"

    def get_closest_marker(self, name: str):
        return name if name in self.markers else None

    def add_marker(self, marker) -> None:
        self.markers.add(marker.name)


def test_the_long_tests_come_first_the_rest_in_order():
    items = [_Item("a"), _Item("b", "slow"), _Item("c", "mpi"), _Item("d", "oclgrind"),
             _Item("e"), _Item("f", "slow", "mpi")]
    conftest.order(items, {})
    assert [i.name for i in items] == ["b", "d", "f", "a", "c", "e"]


def test_the_recorded_durations_order_the_tests(tmp_path):
    """With a table of durations (pytest's --durations lines, setup and call added up) the
    longest start first, a long-marked test the table lacks counts conftest.LONG_GUESS
    seconds, and the tests the table lacks keep their order after the recorded ones."""
    table = tmp_path / "durations.txt"
    table.write_text("============ slowest durations ============\n"
                     "31.00s call     tests/x.py::e\n"
                     " 5.00s call     tests/x.py::c\n"
                     "16.00s setup    tests/x.py::c\n"
                     "25.00s call     tests/x.py::a\n"
                     "(3 durations < 0.005s hidden.)\n")
    assert conftest.recorded(table) == {"tests/x.py::e": 31.0, "tests/x.py::c": 21.0,
                                        "tests/x.py::a": 25.0}
    items = [_Item("a"), _Item("b", "slow"), _Item("c", "mpi"), _Item("d"), _Item("e"),
             _Item("f", "oclgrind"), _Item("g")]
    conftest.order(items, conftest.recorded(table))
    assert conftest.LONG_GUESS == 20.0
    assert [i.name for i in items] == ["e", "a", "c", "b", "f", "d", "g"]


def test_a_module_s_tests_stay_together():
    """A module's tests are not dealt apart by the order (its module-scoped fixtures would
    be set up again for each stretch of them): the modules by their longest test, each
    module's tests longest first."""
    items = [_Item("a"), _Item("b"), _Item("c"), _Item("d")]
    items[2].nodeid = "tests/y.py::c"
    items[3].nodeid = "tests/y.py::d"
    conftest.order(items, {"tests/x.py::a": 30.0, "tests/x.py::b": 1.0,
                           "tests/y.py::c": 2.0, "tests/y.py::d": 10.0})
    assert [i.name for i in items] == ["a", "b", "d", "c"]
    items = [_Item("a"), _Item("c"), _Item("b")]      # equal longest tests: file order
    items[1].nodeid = "tests/y.py::c"
    conftest.order(items, {"tests/x.py::a": 5.0, "tests/y.py::c": 5.0,
                           "tests/x.py::b": 1.0})
    assert [i.name for i in items] == ["a", "b", "c"]


def test_the_table_names_tests_of_the_suite():
    """Every test id of tests/durations.txt is a test of the suite (a renamed test would
    silently lose its place at the start)."""
    names = {tuple(t.split("::", 1)) for t in conftest.recorded()}
    assert len(names) >= 20
    for path, name in names:
        file = ROOT / path
        assert file.is_file(), path
        assert f"def {name.split('[')[0]}(" in file.read_text(), (path, name)


@pytest.mark.parametrize("folder, marked", [("gravity", True), ("io", False)])
def test_the_kernels_folders_are_marked_gpu(folder, marked):
    item = _Item("a")
    item.fspath = ROOT / "tests" / folder / "test_x.py"
    conftest.pytest_collection_modifyitems([item])
    assert ("gpu" in item.markers) == marked


class _Node:
    """A pytest-xdist worker as its load scheduler sees it."""

    def __init__(self, name: str) -> None:
        self.name, self.queue, self.shutting_down = name, [], False
        self.gateway = SimpleNamespace(id=name)

    def send_runtest_some(self, indices) -> None:
        self.queue.extend(indices)

    def shutdown(self) -> None:
        self.shutting_down = True


def _addopts_option(name: str):
    """The value of ``name`` (e.g. "--maxschedchunk") in setup.cfg's addopts, or None."""
    cfg = configparser.ConfigParser()
    cfg.read(ROOT / "setup.cfg")
    args = shlex.split(cfg["tool:pytest"].get("addopts", ""))
    for i, a in enumerate(args):
        if a == name:
            return args[i + 1]
        if a.startswith(name + "="):
            return a.split("=", 1)[1]
    return None


def test_the_long_tests_are_dealt_to_both_workers():
    """pytest-xdist's load scheduler with setup.cfg's options, on a suite shaped like ours
    (70 long tests of 100 s first, 1 350 of 1 s): the two workers end within a long test of
    each other.  Without --maxschedchunk 1 the scheduler hands each worker a first batch
    of a quarter of its share (~177 tests), so one worker got every long test and the
    suite took as long as the long tests alone (docs/testing.md)."""
    xdist_load = pytest.importorskip("xdist.scheduler.load")
    chunk = _addopts_option("--maxschedchunk")

    class Config:
        def getvalue(self, name):
            return [f"{_addopts_option('-n')}*popen"]

        def getoption(self, name):
            return int(chunk) if name == "maxschedchunk" and chunk is not None else None

    seconds = [100.0] * 70 + [1.0] * 1350
    sched = xdist_load.LoadScheduling(Config())
    nodes = [_Node("gw0"), _Node("gw1")]
    for node in nodes:
        sched.add_node(node)
    for node in nodes:
        sched.add_node_collection(node, [f"t{i}" for i in range(len(seconds))])
    sched.schedule()
    clock = {node.name: 0.0 for node in nodes}
    done = 0
    while done < len(seconds):
        busy = [n for n in nodes if n.queue]
        assert busy, "tests left that no worker holds"
        node = min(busy, key=lambda n: clock[n.name] + seconds[n.queue[0]])
        index = node.queue.pop(0)
        clock[node.name] += seconds[index]
        sched.mark_test_complete(node, index, seconds[index])
        done += 1
    ends = sorted(clock.values())
    assert ends[1] - ends[0] <= 100.0, clock
