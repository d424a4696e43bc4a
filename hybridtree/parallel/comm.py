"""Communicator layer: mpi4py when it is installed and the run has several processes,
otherwise one process with the same interface (so the code runs unchanged without MPI).

Only numpy buffers travel in the hot path (uppercase mpi4py calls); small control data
(cuts, counts) may be pickled.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import numpy as np

__all__ = ["Comm", "CollectiveError", "Pending", "world", "node_local_rank"]


class CollectiveError(RuntimeError):
    """An error raised on every process together (one process found it, all were told),
    so the command line reports it once and every process stops cleanly."""


@dataclass
class Comm:
    """A communicator: ``mpi`` is an mpi4py communicator, or None for one process."""

    mpi: Any = None

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
        None elsewhere.  The rows travel as bytes."""
        rows = np.ascontiguousarray(rows)
        if self.mpi is None:
            return rows
        from mpi4py import MPI
        counts = self.allgather_float(float(len(rows))).astype(np.int64)
        item = rows.dtype.itemsize * int(np.prod(rows.shape[1:], dtype=np.int64))
        flat = rows.view(np.uint8).reshape(-1) if rows.size else np.empty(0, np.uint8)
        if self.rank != root:
            self.mpi.Gatherv([flat, MPI.BYTE], None, root=root)
            return None
        out = np.empty((int(counts.sum()),) + rows.shape[1:], rows.dtype)
        sizes = counts * item
        displs = np.concatenate([[0], np.cumsum(sizes)[:-1]])
        self.mpi.Gatherv([flat, MPI.BYTE], [out.view(np.uint8).reshape(-1), sizes, displs,
                                            MPI.BYTE], root=root)
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
        gives the received rows (the counts are exchanged first, blocking)."""
        send = np.ascontiguousarray(send)
        counts = np.asarray(counts, dtype=np.int64)
        if self.mpi is None:
            return Pending(send[: counts[0]].copy())
        from mpi4py import MPI
        recv_counts = np.empty(self.size, np.int64)
        self.mpi.Alltoall(counts, recv_counts)          # a few bytes: blocking is fine
        item = send.dtype.itemsize * int(np.prod(send.shape[1:], dtype=np.int64))
        recv = np.empty((int(recv_counts.sum()),) + send.shape[1:], send.dtype)
        sc, rc = counts * item, recv_counts * item
        sd = np.concatenate([[0], np.cumsum(sc)[:-1]])
        rd = np.concatenate([[0], np.cumsum(rc)[:-1]])
        sbuf = [send.view(np.uint8).reshape(-1), sc, sd, MPI.BYTE]
        req = self.mpi.Ialltoallv(sbuf, [recv.view(np.uint8).reshape(-1), rc, rd, MPI.BYTE])
        return Pending(recv, req, (send, sbuf))


class Pending:
    """A non-blocking exchange in flight (:meth:`Comm.ialltoallv`): :meth:`wait` returns
    the received rows; the send buffer stays referenced until then."""

    def __init__(self, result: np.ndarray, request: Any = None, keep: Any = None):
        self._result, self._request, self._keep = result, request, keep

    def test(self) -> bool:
        """Whether it has arrived (and a chance for MPI to progress it)."""
        return self._request is None or bool(self._request.Test())

    def wait(self) -> np.ndarray:
        if self._request is not None:
            self._request.Wait()
            self._request, self._keep = None, None
        return self._result


def world() -> Comm:
    """COMM_WORLD through mpi4py when it can be imported, else a one-process Comm."""
    try:
        from mpi4py import MPI
    except ImportError:
        return Comm(None)
    return Comm(MPI.COMM_WORLD)


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
