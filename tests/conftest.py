"""Shared fixtures: one OpenCL runtime per session (the CPU device in CI), a Plummer
sphere, the figures a plot saves, a folder holding the test module's CONFIG; the ``gpu``
marker of the kernels' test folders; the long tests first (docs/testing.md).  Shared
functions are in :mod:`tests.helpers`."""

import re
from pathlib import Path

import pytest

from hybridtree.ics import plummer
from hybridtree.device.choice import get_runtime
from tests import helpers

#: the folders whose tests exercise the kernels: the round to run on a GPU machine
#: (``HYBRIDTREE_DEVICE=nvidia pytest -m gpu``); every test still passes on the CPU device
GPU_FOLDERS = {"device", "gravity", "integrate"}


#: markers of the tests that take longest (tens of seconds to minutes each on 2 cores)
LONG = ("slow", "oclgrind")

#: the tests' recorded durations: lines of pytest's ``--durations`` list ("12.34s call
#: tests/...::name"; setup and teardown add to the call), of a run of the whole suite on
#: the 2-core CI machine (docs/testing.md says how to refresh it)
DURATIONS = Path(__file__).with_name("durations.txt")

#: the guess for a long test (marker ``slow`` or ``oclgrind``) that the table lacks, seconds
LONG_GUESS = 20.0


def recorded(path: Path = DURATIONS) -> dict[str, float]:
    """Seconds per test id of the table at ``path`` (empty where there is none)."""
    out: dict[str, float] = {}
    for line in path.read_text().splitlines() if path.is_file() else ():
        m = re.match(r"\s*([0-9.]+)s\s+(?:call|setup|teardown)\s+(\S+)", line)
        if m:
            out[m[2]] = out.get(m[2], 0.0) + float(m[1])
    return out


def pytest_collection_modifyitems(items):
    for item in items:
        if Path(str(item.fspath)).parent.name in GPU_FOLDERS:
            item.add_marker(pytest.mark.gpu)
    order(items, recorded())


def order(items: list, table: dict[str, float]) -> None:
    """Sort ``items`` longest first by ``table`` (seconds per test id), a long-marked test
    it lacks counting LONG_GUESS seconds, the rest in their order; a module's tests
    together, the modules ordered by their longest test.  pytest-xdist
    (setup.cfg: -n 2, --maxschedchunk 1) hands out tests in this order as workers free up,
    so that the last tests to start are short ones and the two workers end together,
    where a long test left to the end runs alone while the other worker idles."""

    def seconds(item) -> float:
        guess = LONG_GUESS if any(item.get_closest_marker(m) for m in LONG) else 0.0
        return table.get(item.nodeid, guess)

    # a module's tests stay together (the modules by their longest test, each longest
    # first): a module-scoped fixture is set up again each time its module's tests are
    # resumed after another module's, once per stretch of them (e.g. the MPI share tests'
    # three mpiexec runs, ~8 s, for each of their long tests dealt apart)
    module = {}
    for i, item in enumerate(items):
        name = item.nodeid.split("::", 1)[0]
        first, longest = module.get(name, (i, 0.0))
        module[name] = (first, max(longest, seconds(item)))
    items.sort(key=lambda item: (-module[item.nodeid.split("::", 1)[0]][1],
                                 module[item.nodeid.split("::", 1)[0]][0], -seconds(item)))


@pytest.fixture(autouse=True)
def _current_test(request):
    """The running test, for :func:`tests.helpers.mpiexec`'s check of its marker."""
    helpers.CURRENT["node"] = request.node
    yield
    helpers.CURRENT.pop("node", None)


@pytest.fixture(scope="session")
def runtime():
    return get_runtime()


@pytest.fixture(scope="session")
def plummer_1e5():
    pos, _, mass = plummer(100_000, seed=11)
    return pos, mass


@pytest.fixture
def figures(monkeypatch) -> dict:
    """The figures hybridtree.analysis.plot saves, by file name (each with an Agg canvas to
    measure)."""
    from matplotlib.backends.backend_agg import FigureCanvasAgg

    from hybridtree.analysis import plot
    seen = {}
    save = plot.save_figure

    def keep(fig, path):
        seen[path.name] = fig
        out = save(fig, path)
        FigureCanvasAgg(fig).draw()
        return out

    monkeypatch.setattr(plot, "save_figure", keep)
    return seen


@pytest.fixture
def here(tmp_path, monkeypatch, request):
    """A temporary folder, made the working directory, holding the test module's config
    files: ``CONFIG_FILES`` (file name -> TOML text), or else ``CONFIG`` as ``c.toml``."""
    monkeypatch.chdir(tmp_path)
    files = getattr(request.module, "CONFIG_FILES", None) or {"c.toml": request.module.CONFIG}
    for name, text in files.items():
        (tmp_path / name).write_text(text)
    return tmp_path
