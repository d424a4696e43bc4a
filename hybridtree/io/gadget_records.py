"""The Fortran unformatted records of a GADGET-2 binary file (``<int n> n bytes <int n>``,
:mod:`hybridtree.io.gadget_binary` describes the format): walking them checked marker
against marker (:class:`Records`) and the element size of a block (:func:`element_size`)."""

from __future__ import annotations

import struct
from pathlib import Path
from typing import BinaryIO

from .hdf5_files import SnapshotError

__all__ = ["Records", "element_size"]


class Records:
    """The Fortran records of an open file, checked marker against marker."""

    def __init__(self, f: BinaryIO, path: Path, endian: str):
        self.f, self.path, self.endian = f, path, endian
        self.size = 0           # the bytes of the record read or skipped last

    def _marker(self, what: str, optional: bool = False) -> int | None:
        raw = self.f.read(4)
        if not raw and optional:
            return None
        if len(raw) < 4:
            raise SnapshotError(f"{self.path}: the file ends inside the {what} record: a "
                                f"truncated file")
        return struct.unpack(self.endian + "I", raw)[0]

    def skip_or_read(self, what: str, read: bool, optional: bool = False) -> bytes | None:
        """The next record's bytes (or b"" if not ``read``: seek past it); None at the
        end of the file if ``optional``."""
        n = self._marker(what, optional)
        if n is None:
            return None
        self.size = n
        if read:
            data = self.f.read(n)
            short = len(data) < n
        else:
            start = self.f.tell()
            short = self.f.seek(0, 2) < start + n
            self.f.seek(start + n)
            data = b""
        if short:
            raise SnapshotError(f"{self.path}: the {what} record says {n} bytes but the file "
                                f"ends first: a truncated file")
        tail = self._marker(what)
        if tail != n:
            raise SnapshotError(f"{self.path}: the {what} record starts with the size {n} but "
                                f"ends with {tail}: inconsistent block sizes")
        return data

    def labelled(self) -> dict[str, tuple[int, int]]:
        """Format 2: label -> (offset of its record, bytes) of every block after the
        header: found by label, so that blocks in another order are read too."""
        blocks = {}
        while True:
            label = self.skip_or_read("block label", True, optional=True)
            if label is None:
                return blocks
            if len(label) != 8:
                raise SnapshotError(f"{self.path}: a format-2 label record of {len(label)} "
                                    f"bytes (expected 8): inconsistent block sizes")
            name = label[:4].decode("ascii", "replace")
            start = self.f.tell()
            self.skip_or_read(f"{name!r}", False)
            blocks[name] = (start, self.f.tell() - start - 8)


def element_size(path: Path, nbytes: int, n: int, width: int, what: str) -> int:
    """4 or 8: the bytes of each of a block's ``n`` x ``width`` numbers, from its size."""
    for size in (4, 8):
        if nbytes == n * width * size:
            return size
    shape = f"{n} x {width}" if width > 1 else f"{n}"
    raise SnapshotError(f"{path}: its {what} block holds {nbytes} bytes, neither {shape} x 4 "
                        f"nor {shape} x 8 for the header's particles: inconsistent block sizes")
