"""Kernel builds are quiet: a compiler's remarks on a successful build are logged at
debug level, not raised as pyopencl's CompilerWarning (which NVIDIA's compiler, always
filling the log, would trigger on every build)."""

import itertools
import logging
import os
import warnings

import pyopencl as cl
import pytest

from hybridtree.device import runtime as runtime_module
from hybridtree.device.runtime import DeviceError, Runtime, build_log, build_program

# PoCL's compiler (clang) writes ``#warning`` to the build log; NVIDIA's does not, but
# remarks on every kernel it compiles
REMARK = "#warning a remark for the build log\n"
KERNEL = "__kernel void k(__global float *a) {{ a[get_global_id(0)] = {}.0f; }}\n"
OPTIONS = ["-cl-std=CL1.2"]
_serial = itertools.count()


def fresh(remark: bool = True) -> str:
    """A source no compiler cache has seen (NVIDIA's returns a cached build with an
    empty log), with or without the ``#warning``."""
    text = KERNEL.format(f"{os.getpid()}{next(_serial)}")
    return REMARK + text if remark else text


@pytest.fixture
def no_compiler_output(monkeypatch):
    monkeypatch.delenv("PYOPENCL_COMPILER_OUTPUT", raising=False)


def said(prg) -> list[str]:
    """The lines of ``prg``'s build log (without build_log's device headings)."""
    return [line for line in build_log(prg).splitlines()[1:] if line.strip()]


def ours(caplog) -> list[logging.LogRecord]:
    return [r for r in caplog.records if r.name == "hybridtree.device.choice"]


def test_the_device_fills_the_log(runtime, no_compiler_output):
    # without this the other tests would pass for the wrong reason
    with pytest.warns(cl.CompilerWarning):
        prg = cl.Program(runtime.context, fresh()).build(options=OPTIONS)
    assert said(prg)


def test_remarks_are_logged_not_warned(runtime, no_compiler_output, caplog):
    caplog.set_level(logging.DEBUG, logger="hybridtree.device.choice")
    with warnings.catch_warnings():
        warnings.simplefilter("error")          # any escaping warning fails the test
        prg = build_program(runtime.context, fresh(), OPTIONS, "the test kernel")
    assert said(prg)
    # every record at debug level; one names the build and holds the compiler's log (a
    # driver that also writes to file descriptor 2, NVIDIA's, adds a record of its own:
    # device/quiet.py)
    records = ours(caplog)
    assert records and all(r.levelno == logging.DEBUG for r in records)
    [record] = [r for r in records if "the test kernel" in r.getMessage()]
    assert all(line in record.getMessage() for line in said(prg))


def test_runtime_builds_are_quiet(runtime, no_compiler_output, monkeypatch, caplog):
    caplog.set_level(logging.DEBUG, logger="hybridtree.device.choice")
    monkeypatch.setattr(runtime_module, "kernel_source", lambda name, text=fresh(): text)
    new = Runtime(runtime.info, runtime.context, runtime.queue)     # empty program cache
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        prg = new.program("remark.cl", {"X": 1})
    assert said(prg)
    records = ours(caplog)
    assert all(r.levelno == logging.DEBUG for r in records)
    [record] = [r for r in records if "remark.cl" in r.getMessage()]
    assert said(prg)[0] in record.getMessage()


def test_pyopencl_switch_still_shows_the_log(runtime, monkeypatch):
    monkeypatch.setenv("PYOPENCL_COMPILER_OUTPUT", "1")
    with pytest.warns(cl.CompilerWarning) as caught:
        prg = build_program(runtime.context, fresh(), OPTIONS)
    assert said(prg)
    assert all(line in str(caught[0].message) for line in said(prg))


def test_a_clean_build_logs_nothing(runtime, no_compiler_output, caplog):
    caplog.set_level(logging.DEBUG, logger="hybridtree.device.choice")
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        prg = build_program(runtime.context, fresh(remark=False), OPTIONS)
    if said(prg):
        pytest.skip(f"{runtime.info.label}: the compiler remarks on every kernel")
    assert not ours(caplog)


def test_other_warnings_pass_through(runtime, no_compiler_output, monkeypatch):
    real_build = cl.Program.build

    def build(self, *args, **kwargs):
        warnings.warn("not the compiler's", DeprecationWarning)
        return real_build(self, *args, **kwargs)

    monkeypatch.setattr(cl.Program, "build", build)
    with pytest.warns(DeprecationWarning, match="not the compiler's"):
        build_program(runtime.context, fresh(), OPTIONS)


def test_a_failed_build_still_reports_its_log(runtime, no_compiler_output):
    with pytest.raises(DeviceError, match=r"(?s)building broken\.cl failed.*error"):
        build_program(runtime.context, "__kernel void k() { syntax error }", OPTIONS,
                      "broken.cl")


def test_a_drivers_own_words_during_a_build_stay_off_the_terminal(capfd):
    """What a driver writes to file descriptor 2 itself while it builds (Intel's CPU
    runtime: "1 error generated.") is kept from the user's stderr and handed back."""
    import os

    from hybridtree.device.quiet import captured_stderr

    with captured_stderr() as said:
        os.write(2, b"1 error generated.\n")
    assert said == ["1 error generated.\n"]
    os.write(2, b"after\n")
    assert capfd.readouterr().err == "after\n"
