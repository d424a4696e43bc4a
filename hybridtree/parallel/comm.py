"""Communicator layer: mpi4py when it is installed and the run has several processes,
otherwise one process with the same interface (so the code runs unchanged without MPI).

Only numpy buffers travel in the hot path (uppercase mpi4py calls); small control data
(cuts, counts) may be pickled.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import numpy as np

__all__ = ["Comm", "world", "node_local_rank"]


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
        rows = np.ascontiguousarray(rows, dtype=np.float64)
        if self.mpi is None:
            return rows
        from mpi4py import MPI
        counts = self.allgather_float(float(rows.size)).astype(np.int64)
        if self.rank != root:
            self.mpi.Gatherv(rows, None, root=root)
            return None
        out = np.empty((int(counts.sum()) // max(rows.shape[1], 1), rows.shape[1]))
        displs = np.concatenate([[0], np.cumsum(counts)[:-1]])
        self.mpi.Gatherv(rows, [out, counts, displs, MPI.DOUBLE], root=root)
        return out

    def bcast(self, obj: Any, root: int = 0) -> Any:
        return obj if self.mpi is None else self.mpi.bcast(obj, root=root)

    def barrier(self) -> None:
        if self.mpi is not None:
            self.mpi.Barrier()

    def alltoallv(self, send: np.ndarray, counts: np.ndarray) -> np.ndarray:
        """Send rows ``send[sum(counts[:j]) : sum(counts[:j+1])]`` to process j; returns the
        rows received from every process, in rank order.  ``send`` is any numpy array
        (structured dtypes included): it travels as bytes."""
        send = np.ascontiguousarray(send)
        counts = np.asarray(counts, dtype=np.int64)
        if self.mpi is None:
            return send[: counts[0]].copy()
        from mpi4py import MPI
        recv_counts = np.empty(self.size, np.int64)
        self.mpi.Alltoall(counts, recv_counts)
        item = send.dtype.itemsize * int(np.prod(send.shape[1:], dtype=np.int64))
        recv = np.empty((int(recv_counts.sum()),) + send.shape[1:], send.dtype)
        sc, rc = counts * item, recv_counts * item
        sd = np.concatenate([[0], np.cumsum(sc)[:-1]])
        rd = np.concatenate([[0], np.cumsum(rc)[:-1]])
        self.mpi.Alltoallv([send.view(np.uint8).reshape(-1), sc, sd, MPI.BYTE],
                           [recv.view(np.uint8).reshape(-1), rc, rd, MPI.BYTE])
        return recv


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
