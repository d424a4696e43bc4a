"""Communicator layer: mpi4py when it is installed and the run has several processes,
otherwise one process with the same interface (so the code runs unchanged without MPI).

Only numpy buffers travel in the hot path (uppercase mpi4py calls); small control data
(cuts, counts) may be pickled.

Sizes: MPI counts and displacements are C ints, so rows travel as bytes in one collective
(Alltoallv, Gatherv) only while the whole exchange, summed over every process, is at most
``Comm.chunk_bytes`` (:data:`CHUNK_BYTES`); a larger one goes as point-to-point messages of
at most that many bytes each (every process knows that total, so all take the same path
without asking).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import numpy as np

from ..errors import HybridtreeError

__all__ = ["Comm", "CollectiveError", "Pending", "world", "node_local_rank", "CHUNK_BYTES"]

#: most bytes of one MPI message, and most bytes of an exchange that travels as one
#: collective (its counts and displacements are C ints: < 2^31): the default of
#: :attr:`Comm.chunk_bytes`, which a test lowers to force the point-to-point path
CHUNK_BYTES = 1 << 30

# tags of the point-to-point paths (no other point-to-point traffic uses the communicators)
_TAG_ALLTOALLV = 0x6874
_TAG_GATHER = 0x6875


class CollectiveError(HybridtreeError, RuntimeError):
    """An error raised on every process together (one process found it, all were told),
    so the command line reports it once and every process stops cleanly."""


@dataclass
class Comm:
    """A communicator: ``mpi`` is an mpi4py communicator, or None for one process;
    ``chunk_bytes``: most bytes of one message, and of an exchange that travels as one
    collective (module docstring; every process of the communicator must give the same;
    in [1, 2^31))."""

    mpi: Any = None
    chunk_bytes: int = CHUNK_BYTES

    @property
    def rank(self) -> int:
        return 0 if self.mpi is None else self.mpi.Get_rank()

    @property
    def size(self) -> int:
        return 1 if self.mpi is None else self.mpi.Get_size()

    def allreduce(self, value: np.ndarray | float, op: str = "sum") -> np.ndarray:
        """Element-wise reduction over all processes (op: sum, min, max)."""
        arr = np.atleast_1d(np.asarray(value, dtype=np.float64)).copy()
        if self.mpi is None:
            return arr
        from mpi4py import MPI
        out = np.empty_like(arr)
        self.mpi.Allreduce(arr, out, op={"sum": MPI.SUM, "min": MPI.MIN, "max": MPI.MAX}[op])
        return out

    def allgather_float(self, value: np.ndarray | float) -> np.ndarray:
        """(size, ...) array of every process's ``value`` (same shape everywhere)."""
        arr = np.array(value, dtype=np.float64, order="C")   # keeps a 0-d shape
        if self.mpi is None:
            return arr[None]
        out = np.empty((self.size,) + arr.shape)
        self.mpi.Allgather(arr, out)
        return out

    def gather_rows(self, rows: np.ndarray, root: int = 0) -> np.ndarray | None:
        """Concatenation of every process's float64 rows (n_k, m) on ``root``."""
        return self.gather_array(np.ascontiguousarray(rows, dtype=np.float64), root)

    def gather_array(self, rows: np.ndarray, root: int = 0) -> np.ndarray | None:
        """Concatenation of every process's rows (any dtype, structured too) on ``root``;
        None elsewhere.  The rows travel as bytes, in messages of at most CHUNK_BYTES
        when all of them together are more than that (see the module's docstring)."""
        rows = np.ascontiguousarray(rows)
        if self.mpi is None:
            return rows
        from mpi4py import MPI
        counts = self.allgather_float(float(len(rows))).astype(np.int64)
        item = _row_bytes(rows)
        flat = _bytes(rows)
        sizes = counts * item
        limit = _chunk_bytes(self)
        out = (np.empty((int(counts.sum()),) + rows.shape[1:], rows.dtype)
               if self.rank == root else None)
        if sizes.sum() <= limit:
            if self.rank != root:
                self.mpi.Gatherv([flat, MPI.BYTE], None, root=root)
                return None
            displs = np.concatenate([[0], np.cumsum(sizes)[:-1]])
            self.mpi.Gatherv([flat, MPI.BYTE], [_bytes(out), sizes, displs, MPI.BYTE],
                             root=root)
            return out
        if self.rank != root:
            MPI.Request.Waitall(_isend_pieces(self.mpi, flat, root, _TAG_GATHER, limit))
            return None
        dest = _bytes(out)
        start = np.concatenate([[0], np.cumsum(sizes)])
        reqs = []
        for j in range(self.size):
            piece = dest[start[j]:start[j + 1]]
            if j == root:
                piece[:] = flat
            else:
                reqs += _irecv_pieces(self.mpi, piece, j, _TAG_GATHER, limit)
        MPI.Request.Waitall(reqs)
        return out

    def allgather(self, obj: Any) -> list[Any]:
        """Every process's (small, picklable) ``obj``, in rank order."""
        return [obj] if self.mpi is None else self.mpi.allgather(obj)

    def bcast(self, obj: Any, root: int = 0) -> Any:
        return obj if self.mpi is None else self.mpi.bcast(obj, root=root)

    def barrier(self) -> None:
        if self.mpi is not None:
            self.mpi.Barrier()

    def alltoallv(self, send: np.ndarray, counts: np.ndarray) -> np.ndarray:
        """Send rows ``send[sum(counts[:j]) : sum(counts[:j+1])]`` to process j; returns the
        rows received from every process, in rank order.  ``send`` is any numpy array
        (structured dtypes included): it travels as bytes."""
        return self.ialltoallv(send, counts).wait()

    def ialltoallv(self, send: np.ndarray, counts: np.ndarray) -> "Pending":
        """:meth:`alltoallv` without waiting: returns a :class:`Pending` whose ``wait()``
        gives the received rows (the counts are exchanged first, blocking).

        An exchange of at most CHUNK_BYTES in all (summed over every process) is one
        Ialltoallv; a larger one is point-to-point messages of at most CHUNK_BYTES,
        all posted here, so it too runs while the caller works until ``wait()``."""
        send = np.ascontiguousarray(send)
        counts = np.asarray(counts, dtype=np.int64)
        if counts.shape != (self.size,) or (self.size and counts.min() < 0) \
                or counts.sum() > len(send):
            raise ValueError(f"counts must be {self.size} numbers >= 0 adding up to at "
                             f"most {len(send)} rows, got {counts.tolist()}")
        if self.mpi is None:
            return Pending(send[: counts[0]].copy())
        from mpi4py import MPI
        item = _row_bytes(send)
        sc = counts * item
        # with every count goes this process's total, so each process learns the total
        # of the whole exchange and all of them choose the same path
        head = np.column_stack([counts, np.full(self.size, sc.sum(), np.int64)])
        got = np.empty_like(head)
        self.mpi.Alltoall(head, got)                    # a few bytes: blocking is fine
        recv_counts, total = got[:, 0], int(got[:, 1].sum())
        recv = np.empty((int(recv_counts.sum()),) + send.shape[1:], send.dtype)
        rc = recv_counts * item
        sd = np.concatenate([[0], np.cumsum(sc)])
        rd = np.concatenate([[0], np.cumsum(rc)])
        sflat, rflat = _bytes(send), _bytes(recv)
        limit = _chunk_bytes(self)
        if total <= limit:
            sbuf = [sflat, sc, sd[:-1], MPI.BYTE]
            req = self.mpi.Ialltoallv(sbuf, [rflat, rc, rd[:-1], MPI.BYTE])
            return Pending(recv, [req], (send, sbuf))
        reqs = []
        for j in range(self.size):                      # receives first: fewer unexpected
            if j != self.rank:
                reqs += _irecv_pieces(self.mpi, rflat[rd[j]:rd[j + 1]], j,
                                      _TAG_ALLTOALLV, limit)
        for j in range(self.size):
            if j != self.rank:
                reqs += _isend_pieces(self.mpi, sflat[sd[j]:sd[j + 1]], j,
                                      _TAG_ALLTOALLV, limit)
        me = self.rank
        rflat[rd[me]:rd[me + 1]] = sflat[sd[me]:sd[me + 1]]
        return Pending(recv, reqs, send)


class Pending:
    """A non-blocking exchange in flight (:meth:`Comm.ialltoallv`): :meth:`wait` returns
    the received rows; the send buffer stays referenced until then."""

    def __init__(self, result: np.ndarray, requests: list[Any] | None = None,
                 keep: Any = None):
        self._result, self._requests, self._keep = result, requests or [], keep

    def test(self) -> bool:
        """Whether it has arrived (and a chance for MPI to progress it)."""
        if not self._requests:
            return True
        from mpi4py import MPI
        return bool(MPI.Request.Testall(self._requests))

    def wait(self) -> np.ndarray:
        if self._requests:
            from mpi4py import MPI
            MPI.Request.Waitall(self._requests)
            self._requests, self._keep = [], None
        return self._result


def _chunk_bytes(comm: Comm) -> int:
    limit = int(comm.chunk_bytes)
    if not 1 <= limit < 2**31:
        raise ValueError(f"chunk_bytes must be in [1, 2^31), got {comm.chunk_bytes}")
    return limit


def _row_bytes(a: np.ndarray) -> int:
    """Bytes of one row of ``a`` (a[0])."""
    return a.dtype.itemsize * int(np.prod(a.shape[1:], dtype=np.int64))


def _bytes(a: np.ndarray) -> np.ndarray:
    """The bytes of a C-contiguous array as a flat uint8 view (an empty one for no rows:
    a view of a zero-size array of some shapes cannot be taken)."""
    return a.view(np.uint8).reshape(-1) if a.size else np.empty(0, np.uint8)


def _isend_pieces(mpi: Any, data: np.ndarray, dest: int, tag: int, limit: int) -> list[Any]:
    """Non-blocking sends of ``data`` (flat bytes) to ``dest`` in pieces of <= limit bytes;
    none for no bytes.  Pieces of one (source, tag) pair arrive in the order sent (MPI's
    non-overtaking rule), so the receiver posts the same pieces in the same order."""
    from mpi4py import MPI
    return [mpi.Isend([data[a:a + limit], MPI.BYTE], dest=dest, tag=tag)
            for a in range(0, len(data), limit)]


def _irecv_pieces(mpi: Any, data: np.ndarray, source: int, tag: int, limit: int) -> list[Any]:
    """The receives that match :func:`_isend_pieces` of the same length."""
    from mpi4py import MPI
    return [mpi.Irecv([data[a:a + limit], MPI.BYTE], source=source, tag=tag)
            for a in range(0, len(data), limit)]


def world(chunk_bytes: int = CHUNK_BYTES) -> Comm:
    """COMM_WORLD through mpi4py when it can be imported, else a one-process Comm
    (``chunk_bytes``: :class:`Comm`'s)."""
    try:
        from mpi4py import MPI
    except ImportError:
        return Comm(None, chunk_bytes)
    return Comm(MPI.COMM_WORLD, chunk_bytes)


def node_local_rank(comm: Comm) -> int:
    """Rank among the processes of this node (a shared-memory split), for GPU choice."""
    if comm.mpi is None:
        return 0
    from mpi4py import MPI
    local = comm.mpi.Split_type(MPI.COMM_TYPE_SHARED, key=comm.rank)
    try:
        return local.Get_rank()
    finally:
        local.Free()
