"""Shared fixtures: one OpenCL runtime per session (the CPU device in CI), a Plummer
sphere, the figures a plot saves, a folder holding the test module's CONFIG; the ``gpu``
marker of the kernels' test folders; the long tests first (docs/testing.md).  Shared
functions are in :mod:`tests.helpers`."""

from pathlib import Path

import numpy as np
import pytest

from hybridtree.ics import plummer
from hybridtree.device.choice import get_runtime
from tests import helpers

#: the folders whose tests exercise the kernels: the round to run on a GPU machine
#: (``HYBRIDTREE_DEVICE=nvidia pytest -m gpu``); every test still passes on the CPU device
GPU_FOLDERS = {"device", "gravity", "integrate"}


#: markers of the tests that take longest (tens of seconds to minutes each on 2 cores)
LONG = ("slow", "oclgrind")


def pytest_collection_modifyitems(items):
    for item in items:
        if Path(str(item.fspath)).parent.name in GPU_FOLDERS:
            item.add_marker(pytest.mark.gpu)
    # The long tests first, the rest in their order: pytest-xdist (setup.cfg: -n 2) hands
    # out tests in this order as workers free up, so that no long test is left to run
    # alone at the end while the other worker idles.
    items.sort(key=lambda item: not any(item.get_closest_marker(m) for m in LONG))


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
