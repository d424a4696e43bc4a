"""Snapshots written by a background thread while the run steps on.

The run downloads a snapshot's particles into fresh host arrays (through pinned memory
on GPUs) and hands them, with the writing function, to :class:`BackgroundWriter`; the
HDF5 write (which releases the GIL for most of its time) then overlaps the next steps.
One write is in flight at a time: handing over the next one first waits for the last,
so a run never holds more than one extra copy of its particles.  The guarantees of
:func:`hybridtree.io.snapshot.write_snapshot` hold as they are: a file is written under
a temporary name and renamed when complete, so a process killed during a background
write leaves only complete snapshots, and a failed write (disk full) is raised in the
run's own thread at the next hand-over, check or :meth:`BackgroundWriter.wait`, naming
the file.
"""

from __future__ import annotations

import threading
import time
from pathlib import Path
from typing import Callable

__all__ = ["BackgroundWriter"]


class BackgroundWriter:
    """At most one write in flight; its error re-raised in the caller's thread."""

    def __init__(self, done: Callable[[list[Path]], None] | None = None):
        """``done(paths)`` is called in the caller's thread for every finished write."""
        self._thread: threading.Thread | None = None
        self._result: list[Path] = []
        self._error: BaseException | None = None
        self._done = done
        self.seconds = 0.0          # time the writes took in the background, summed
        self.writes = 0

    def submit(self, write: Callable[[], list[Path]]) -> None:
        """Start ``write()`` in the background, after the previous write has finished."""
        self.wait()

        def work() -> None:
            t0 = time.perf_counter()
            try:
                self._result = write()
            except BaseException as exc:        # noqa: BLE001 - re-raised in the caller
                self._error = exc
            self.seconds += time.perf_counter() - t0
            self.writes += 1

        self._thread = threading.Thread(target=work, name="hybridtree-snapshot", daemon=True)
        self._thread.start()

    @property
    def busy(self) -> bool:
        return self._thread is not None and self._thread.is_alive()

    def check(self) -> None:
        """Raise the error of a finished write (nothing while one is in flight)."""
        if self._thread is not None and not self._thread.is_alive():
            self.wait()

    def wait(self) -> list[Path]:
        """Wait for the write in flight; return its paths or raise its error."""
        thread, self._thread = self._thread, None
        if thread is None:
            return []
        thread.join()
        error, self._error = self._error, None
        if error is not None:
            raise error
        paths, self._result = self._result, []
        if self._done is not None:
            self._done(paths)
        return paths
