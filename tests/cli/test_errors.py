"""User errors and bugs at the command line: a user error (a HybridtreeError) is one line and
exit status 2, a bug is its traceback, a line asking for a report and exit status 1;
``--debug`` shows the traceback of a user error too; every error class of the package is
a HybridtreeError; output cut short by its reader ends quietly."""

from __future__ import annotations

import importlib
import inspect
import os
import pkgutil
import subprocess
import sys
from pathlib import Path

import pytest

import hybridtree
from hybridtree.cli import build_parser, commands, main
from hybridtree.config import SCHEMA
from hybridtree.errors import HybridtreeError, UserInputError
from tests.helpers import one_error_line

ROOT = Path(__file__).resolve().parents[2]


def _planted(exc: BaseException):
    def command(args):
        raise exc
    return command


def test_a_user_error_is_one_line_and_status_2(monkeypatch, capsys):
    monkeypatch.setattr(commands, "info", _planted(HybridtreeError("a planted  mistake\nhere")))
    assert main(["info", "x.hdf5"]) == 2
    assert one_error_line(capsys, "a planted mistake here") == "a planted mistake here"


@pytest.mark.parametrize("exc", [RuntimeError("planted bug"), AttributeError("planted bug"),
                                 ValueError("planted bug"), KeyError("planted bug")],
                         ids=lambda e: type(e).__name__)
def test_a_bug_is_its_traceback_a_request_to_report_it_and_status_1(exc, monkeypatch, capsys):
    monkeypatch.setattr(commands, "info", _planted(exc))
    assert main(["info", "x.hdf5"]) == 1
    err = capsys.readouterr().err
    assert "Traceback (most recent call last)" in err
    assert f"{type(exc).__name__}: " in err and "planted bug" in err
    last = err.strip().splitlines()[-1]
    assert last.startswith(f"hybridtree {hybridtree.__version__}: internal error: this is a "
                           "bug; please report it"), last
    assert "hybridtree: error:" not in err


def test_debug_shows_the_traceback_of_a_user_error(monkeypatch, capsys):
    monkeypatch.setattr(commands, "info", _planted(HybridtreeError("planted mistake")))
    for argv in (["--debug", "info", "x.hdf5"], ["info", "x.hdf5", "--debug"]):
        with pytest.raises(HybridtreeError, match="planted mistake"):
            main(argv)


def test_debug_shows_the_traceback_of_a_bug(monkeypatch):
    monkeypatch.setattr(commands, "info", _planted(AttributeError("planted bug")))
    with pytest.raises(AttributeError, match="planted bug"):
        main(["--debug", "info", "x.hdf5"])


def test_a_missing_file_is_a_user_error(tmp_path, capsys):
    assert main(["info", str(tmp_path / "missing.hdf5")]) == 2
    one_error_line(capsys, "missing.hdf5")


def test_a_value_the_ics_refuse_is_a_user_error(tmp_path, capsys):
    """ICs check their arguments with ValueError; the command line hands them the user's
    input, so their refusal is the user's mistake."""
    assert main(["ic", "plummer", "-n", "0", "-o", str(tmp_path / "ic.hdf5")]) == 2
    one_error_line(capsys, "n must be >= 1")
    assert not (tmp_path / "ic.hdf5").exists()


def _all_modules():
    found, skipped = [], []
    for info in pkgutil.walk_packages(hybridtree.__path__, "hybridtree."):
        if info.name.endswith("__main__"):
            continue
        try:
            found.append(importlib.import_module(info.name))
        except ImportError as exc:          # an optional dependency (matplotlib, yt, ...)
            skipped.append((info.name, exc))
    return found, skipped


def test_every_error_class_of_the_package_is_a_hybridtree_error():
    modules, skipped = _all_modules()
    assert len(modules) > 40 and len(skipped) < 5, skipped
    errors = {f"{cls.__module__}.{cls.__qualname__}": cls
              for m in modules for _, cls in inspect.getmembers(m, inspect.isclass)
              if cls.__module__.startswith("hybridtree")
              and cls.__name__.endswith("Error") and issubclass(cls, BaseException)}
    for name in ("hybridtree.config.schema.ConfigError",
                 "hybridtree.device.runtime.DeviceError", "hybridtree.run.processes.RunError",
                 "hybridtree.io.hdf5_files.SnapshotError",
                 "hybridtree.io.hdf5_write.SnapshotWriteError",
                 "hybridtree.parallel.comm.CollectiveError",
                 "hybridtree.run.guards.NumericalError", "hybridtree.errors.UserInputError"):
        assert name in errors, sorted(errors)
    bad = [name for name, cls in errors.items() if not issubclass(cls, HybridtreeError)]
    assert not bad, bad


def test_error_classes_keep_their_standard_bases():
    """Callers that catch ValueError, OSError or RuntimeError keep catching them."""
    from hybridtree.config import ConfigError
    from hybridtree.device.runtime import DeviceError
    from hybridtree.io.snapshot import SnapshotError, SnapshotWriteError
    assert issubclass(ConfigError, ValueError) and issubclass(SnapshotError, ValueError)
    assert issubclass(UserInputError, ValueError) and issubclass(DeviceError, RuntimeError)
    assert issubclass(SnapshotWriteError, OSError)


def test_bench_options_take_their_defaults_and_rules_from_the_schema(capsys):
    args = build_parser().parse_args(["bench"])
    gravity = SCHEMA["gravity"]
    assert args.theta == gravity["theta"].default
    assert args.multipole == gravity["multipole"].default
    assert args.method == gravity["method"].default
    assert build_parser().parse_args(["ic", "plummer", "-n", "5", "-o", "x"]).seed == \
        SCHEMA["ics"]["seed"].default
    with pytest.raises(SystemExit) as stop:
        build_parser().parse_args(["bench", "--theta", "2"])
    assert stop.value.code == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and gravity["theta"].rule in err, err
    for option, setting in (("--method", "method"), ("--multipole", "multipole")):
        with pytest.raises(SystemExit):
            build_parser().parse_args(["bench", option, "nonsense"])
        err = capsys.readouterr().err
        assert all(c in err for c in gravity[setting].choices), err


def test_output_cut_short_by_its_reader_ends_quietly(tmp_path):
    """``hybridtree info SNAPSHOT | head -1``: the reader is gone before the summary is
    written; no error line, no traceback, the status of a command ended by SIGPIPE."""
    snap = tmp_path / "ic.hdf5"
    assert main(["ic", "plummer", "-n", "50", "-o", str(snap)]) == 0
    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    p = subprocess.Popen([sys.executable, "-m", "hybridtree", "info", str(snap)],
                         stdout=subprocess.PIPE, stderr=subprocess.PIPE, env=env,
                         cwd=tmp_path)
    p.stdout.close()                    # long before the command writes its first line
    err = p.stderr.read().decode()
    assert p.wait(timeout=120) == 141 and err == "", err
