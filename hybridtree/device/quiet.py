"""Kernel builds that print nothing of their own: what an OpenCL driver writes itself while
it builds (Intel's CPU runtime writes "1 error generated." to the process's stderr when it
refuses build options, before the error reaches Python) goes to the debug log instead of
the user's terminal (:func:`captured_stderr`, :func:`quiet_build`)."""

from __future__ import annotations

import contextlib
import logging
import os
import sys
import tempfile
from collections.abc import Iterator, Sequence

import pyopencl as cl

__all__ = ["captured_stderr", "quiet_build"]

logger = logging.getLogger("hybridtree.device.choice")


@contextlib.contextmanager
def captured_stderr() -> Iterator[list[str]]:
    """Within the block, what anything in this process writes to file descriptor 2 goes
    to a temporary file; the list yielded holds that text once the block has ended."""
    out: list[str] = []
    try:
        saved = os.dup(2)
    except OSError:                 # no descriptor 2: nothing to keep off it
        yield out
        return
    with tempfile.TemporaryFile(mode="w+b") as tmp:
        sys.stderr.flush()
        os.dup2(tmp.fileno(), 2)
        try:
            yield out
        finally:
            sys.stderr.flush()
            os.dup2(saved, 2)
            os.close(saved)
            tmp.seek(0)
            out.append(tmp.read().decode(errors="replace"))


def quiet_build(context: cl.Context, source: str, options: Sequence[str]) -> cl.Program:
    """``cl.Program(context, source).build(options)``, the driver's own output in the debug
    log; past pyopencl's cache where that cache hides the build's error."""
    said: list[str] = []
    try:
        with captured_stderr() as said:
            try:
                return cl.Program(context, source).build(options=list(options))
            except KeyError as exc:
                if exc.args != ("PYOPENCL_CACHE_FAILURE_FATAL",):
                    raise
            # pyopencl's binary cache (2026.1) reads os.environ["PYOPENCL_CACHE_FAILURE_
            # FATAL"] unguarded where a build fails with anything but a compile error
            # (options the compiler refuses), and that KeyError hides the error: build past
            # the cache to see it
            return cl.Program(context, source).build(options=list(options), cache_dir=False)
    finally:
        if said and said[0].strip():
            logger.debug("the OpenCL driver wrote while building:\n%s", said[0].strip())
