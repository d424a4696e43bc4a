"""Rough edges found by a new user (part c): ``info`` of a folder, a re-run into a used
output folder names ``--restart``, Ctrl-C while the command is still importing, and plain
``yt.load`` of a snapshot in the user guide."""

import os
import re
import signal
import subprocess
import sys
import time
from pathlib import Path

import numpy as np
import pytest

from tests.helpers import interruptible, one_error_line, run_config
from hybridtree.cli import main
from hybridtree.io.snapshot import write_snapshot
from hybridtree.particles import Particles
from hybridtree.config.units import Units

ROOT = Path(__file__).resolve().parents[2]
UNITS = Units(3.0856775814913673e21, 1.98841e43)
DT = 1 / 64
SMALL = run_config(300, 4, 0.6, 8, 4, 4, DT)
CONFIG_FILES = {"small.toml": SMALL}


def particles(n: int = 60, seed: int = 2) -> Particles:
    rng = np.random.default_rng(seed)
    return Particles(rng.normal(size=(n, 3)), 0.1 * rng.normal(size=(n, 3)),
                     np.full(n, 1.0 / n), np.arange(1, n + 1, dtype=np.uint64))


# --- 1. hybridtree info FOLDER ---------------------------------------------------------

def test_info_of_a_folder_without_snapshots_says_so(tmp_path, capsys):
    empty = tmp_path / "run"
    empty.mkdir()
    assert main(["info", str(empty)]) == 2
    msg = one_error_line(capsys, f"no snapshot in folder {empty}", "snapshot_*.hdf5")
    assert "no such file" not in msg, msg
    # a run stopped before its first snapshot: the same
    (empty / "run.log").write_text("start: ...\n")
    (empty / "diagnostics.csv").write_text("step,time\n")
    assert main(["info", str(empty)]) == 2
    one_error_line(capsys, f"no snapshot in folder {empty}")
    assert sorted(p.name for p in empty.iterdir()) == ["diagnostics.csv", "run.log"]


def test_info_of_a_run_folder_describes_its_newest_snapshot(tmp_path, capsys):
    for number, t in ((0, 0.0), (2, 0.5), (1, 0.25)):
        write_snapshot(tmp_path / f"snapshot_{number:04d}.hdf5", particles(), t, UNITS)
    assert main(["info", str(tmp_path / "snapshot_0002.hdf5")]) == 0
    newest = capsys.readouterr().out
    assert main(["info", str(tmp_path)]) == 0
    assert capsys.readouterr().out == newest
    assert newest.splitlines()[0] == str(tmp_path / "snapshot_0002.hdf5")


# --- 2. a re-run into a used output folder ---------------------------------------------

def test_a_rerun_into_a_used_folder_names_restart_and_overwrite(here, capsys):
    assert main(["run", "small.toml", "--quiet"]) == 0
    before = (here / "out" / "snapshot_0002.hdf5").read_bytes()
    assert main(["run", "small.toml", "--quiet"]) == 2
    msg = one_error_line(capsys, "already holds a run", "--overwrite", "--restart")
    # the command that continues it, as typed
    assert "hybridtree run --restart out" in msg, msg
    assert (here / "out" / "snapshot_0002.hdf5").read_bytes() == before


def test_continuing_from_an_older_snapshot_names_restart_of_the_folder(here, capsys):
    assert main(["run", "small.toml", "--quiet"]) == 0
    assert main(["run", "--restart", "out/snapshot_0001.hdf5", "--quiet"]) == 2
    msg = one_error_line(capsys, "snapshot_0002.hdf5", "--overwrite")
    # from the newest state instead: the folder
    assert "hybridtree run --restart out" in msg, msg


# --- 3. Ctrl-C while the command is starting (importing) --------------------------------

#: a test helper, put on PYTHONPATH as sitecustomize: when the module named in
#: HT_TEST_SIGINT_AT is first imported, it marks the file HT_TEST_SIGINT_MARK and sends
#: this process a real SIGINT (as a Ctrl-C at that moment would)
SITECUSTOMIZE = '''
import os, signal, sys

_at = os.environ.get("HT_TEST_SIGINT_AT")


class _InterruptAtImport:
    def find_spec(self, name, path=None, target=None):
        if name == _at:
            sys.meta_path.remove(self)
            with open(os.environ["HT_TEST_SIGINT_MARK"], "w") as f:
                f.write(name)
            os.kill(os.getpid(), signal.SIGINT)
            for _ in range(1000):       # the Python-level handler runs here
                pass
        return None


if _at:
    sys.meta_path.insert(0, _InterruptAtImport())
'''

#: what pip writes as the console script ``hybridtree`` (setup.cfg: hybridtree.cli:main)
CONSOLE_SCRIPT = '''import sys
from hybridtree.cli import main
if __name__ == '__main__':
    sys.argv[0] = sys.argv[0].removesuffix('.exe')
    sys.exit(main())
'''


@pytest.fixture(scope="module")
def launcher(tmp_path_factory):
    top = tmp_path_factory.mktemp("sigint")
    (top / "hook").mkdir()
    (top / "hook" / "sitecustomize.py").write_text(SITECUSTOMIZE)
    (top / "bin").mkdir()
    (top / "bin" / "hybridtree").write_text(CONSOLE_SCRIPT)
    return top


# hybridtree.cli: right after hybridtree/__init__.py; argparse, json: cli.py's own imports;
# hybridtree.run.simulation, numpy: what main() imports before it runs the command
@pytest.mark.parametrize("at", ["hybridtree.cli", "argparse", "json", "hybridtree.run.simulation",
                                "numpy"])
@pytest.mark.parametrize("how", ["console_script", "python_m"])
def test_ctrl_c_while_importing_is_one_line_and_130(launcher, tmp_path, at, how):
    mark = tmp_path / "mark"
    env = {**os.environ, "PYTHONPATH": os.pathsep.join([str(launcher / "hook"), str(ROOT)]),
           "HT_TEST_SIGINT_AT": at, "HT_TEST_SIGINT_MARK": str(mark)}
    start = ([str(launcher / "bin" / "hybridtree")] if how == "console_script"
             else ["-m", "hybridtree"])
    r = subprocess.run([sys.executable, *start, "info", "missing.hdf5"], cwd=tmp_path,
                       env=env, capture_output=True, text=True, timeout=120,
                       preexec_fn=interruptible)
    assert mark.read_text() == at            # the interrupt came during that import
    assert (r.returncode, r.stderr, r.stdout) == (130, "hybridtree: interrupted\n", "")


def test_ctrl_c_at_any_moment_of_a_short_command(launcher, tmp_path):
    """A real Ctrl-C at moments spread over a whole ``hybridtree info missing.hdf5``:
    every outcome is the one line and 130, or Python had not yet reached hybridtree's
    code (no frame in hybridtree/, e.g. during site's imports: "Fatal Python error:
    init_import_site"), or the command had already finished (its own error line)."""
    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    cmd = [sys.executable, str(launcher / "bin" / "hybridtree"), "info", "missing.hdf5"]
    took = np.inf
    for _ in range(2):
        t0 = time.perf_counter()
        whole = subprocess.run(cmd, cwd=tmp_path, env=env, capture_output=True, text=True,
                               timeout=120, preexec_fn=interruptible)
        took = min(took, time.perf_counter() - t0)
    done = whole.stderr
    assert whole.returncode == 2 and done.startswith("hybridtree: error: "), done
    interrupted = 0
    for k in range(1, 12):
        p = subprocess.Popen(cmd, cwd=tmp_path, env=env, stdout=subprocess.PIPE,
                             stderr=subprocess.PIPE, text=True, preexec_fn=interruptible)
        time.sleep(took * k / 12)
        p.send_signal(signal.SIGINT)
        out, err = p.communicate(timeout=120)
        if (p.returncode, err, out) == (130, "hybridtree: interrupted\n", ""):
            interrupted += 1
        elif err == done:
            assert p.returncode in (2, -signal.SIGINT), (k, p.returncode)   # in exit
        else:
            assert str(ROOT / "hybridtree") not in err, (k, p.returncode, err)  # not started
    assert interrupted >= 3


def test_importing_hybridtree_leaves_ctrl_c_alone(tmp_path):
    """Only the command itself turns Ctrl-C into one line: a script or notebook that
    imports hybridtree keeps Python's KeyboardInterrupt."""
    code = ("import signal, hybridtree, hybridtree.cli; "
            "assert signal.getsignal(signal.SIGINT) is signal.default_int_handler; "
            "print('ok')")
    r = subprocess.run([sys.executable, "-c", code], cwd=tmp_path, capture_output=True,
                       text=True, env={**os.environ, "PYTHONPATH": str(ROOT)}, timeout=120,
                       preexec_fn=interruptible)
    assert (r.returncode, r.stdout.strip()) == (0, "ok"), r.stderr


def test_main_keeps_the_callers_ctrl_c(tmp_path, capsys):
    """main() in a Python process (not the command) changes no signal handler."""
    before = signal.getsignal(signal.SIGINT)
    assert main(["info", str(tmp_path / "missing.hdf5")]) == 2
    capsys.readouterr()
    assert signal.getsignal(signal.SIGINT) is before


# --- 4. plain yt.load in the user guide ------------------------------------------------

def _yt_section(text: str) -> str:
    start = text.index("**yt**")
    end = text.index("\n## ", start)
    return text[start:end]


def test_output_md_says_plain_yt_load_works_and_what_fails_without_the_frontend():
    """Plain ``yt.load`` of a snapshot works where hybridtree is installed (its
    ``yt.frontends`` entry point); the guide says so where yt is introduced, and names
    yt's UnitParseError about 'unitary' (to be found by a search for it) for a reader
    without the frontend, with the call that works then (``load_yt``)."""
    section = _yt_section((ROOT / "docs" / "output.md").read_text(encoding="utf-8"))
    first = section.split("\n\n")[0]
    assert "yt.load" in first and "yt.frontends" in first, first
    assert "UnitParseError" in section and "'unitary'" in section, section
    assert "hybridtree.io.load_yt(" in section, section
    quick = (ROOT / "docs" / "quickstart.md").read_text(encoding="utf-8")
    quick_yt = quick[quick.index("**yt**"):quick.index("**h5py**")]
    assert "yt.load" in quick_yt and "frontend" in quick_yt, quick_yt


def test_the_documented_yt_example_renders_and_fails_without_the_frontend(tmp_path,
                                                                          monkeypatch):
    """What docs/output.md states: with hybridtree's frontend, plain yt.load and a
    ParticleProjectionPlot work (the section's example renders); with yt's own reader
    alone the plot raises UnitParseError for 'unitary'."""
    yt = pytest.importorskip("yt")
    from unyt.exceptions import UnitParseError
    from yt.utilities.object_registries import output_type_registry
    yt.set_log_level(40)
    frontend = pytest.importorskip("hybridtree.io.yt_frontend")
    monkeypatch.chdir(tmp_path)
    (tmp_path / "out").mkdir()
    path = write_snapshot(tmp_path / "out" / "snapshot_0008.hdf5", particles(300), 4.0,
                          UNITS)
    section = _yt_section((ROOT / "docs" / "output.md").read_text(encoding="utf-8"))
    blocks = re.findall(r"```python\n(.*?)```", section, flags=re.S)
    assert blocks
    for code in blocks:
        exec(compile(code, "docs/output.md", "exec"), {})
    assert list(tmp_path.glob("*.png"))
    # yt's readers alone: our classes out of yt's registry of dataset types
    for name in [k for k, v in output_type_registry.items()
                 if getattr(v, "__module__", "") == frontend.__name__]:
        monkeypatch.delitem(output_type_registry, name)
    ds = yt.load(str(path))
    with pytest.raises(UnitParseError, match="unitary"):
        yt.ParticleProjectionPlot(ds, "z", ("all", "particle_mass"))


# --- 5. one figure per duration in the guide --------------------------------------------

def _guide() -> dict[str, str]:
    pages = {"README.md": ROOT / "README.md"}
    pages.update({f"docs/{p.name}": p for p in sorted((ROOT / "docs").glob("*.md"))})
    return {name: " ".join(p.read_text(encoding="utf-8").split()) for name, p in pages.items()}


def test_the_test_suites_duration_is_given_once_in_the_readme():
    found = {name: len(re.findall(r"minutes on 2 cores", text))
             for name, text in _guide().items()}
    assert {name: n for name, n in found.items() if n} == {"README.md": 1}, found


def test_the_first_runs_duration_says_it_compiles_the_kernels_and_agrees_everywhere():
    """The README example's time: the same figures in the README and the quickstart, and
    the first run's (which compiles the kernels) given apart from the later runs'."""
    guide = _guide()
    figures = {}
    for name in ("README.md", "docs/quickstart.md"):
        text = guide[name]
        later = re.findall(r"about (\d+) s on 2 cores", text)
        first = re.findall(r"first run on a machine also compiles the OpenCL kernels: about "
                           r"(\d+) s", text)
        assert len(later) == 1 and len(first) == 1, (name, later, first)
        figures[name] = (later[0], first[0])
        assert int(first[0]) > int(later[0]), figures
    assert len(set(figures.values())) == 1, figures
    running = re.findall(r"`plummer_small\.toml` \|[^|]*\|[^|]*\| [^|]*?about (\d+) s on 2 cores",
                         guide["docs/running.md"])
    assert running == [figures["README.md"][0]], running
