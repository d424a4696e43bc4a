"""The object AMUSE's worker script makes in the worker process (:class:`WorkerProcess`):
:class:`hybridtree.amuse.worker.HybridtreeImplementation` with the worker's socket sending
small packets at once.  Apart from worker.py so that nothing but the worker process
changes ``socket``; AMUSE names the worker script after this file."""

from __future__ import annotations

from typing import Any

from .worker import HybridtreeImplementation

__all__ = ["WorkerProcess"]


class WorkerProcess(HybridtreeImplementation):
    """The object AMUSE's worker script makes (in the worker process only): its sockets
    send small packets at once.  AMUSE's Python worker (amuse.rfi.python_code,
    2024.6.0) connects with ``socket.create_connection`` and leaves Nagle's algorithm on,
    so every reply of more than one packet waited for the client's delayed ACK: 40-50 ms
    a call, measured on a busy 2-core machine (1-5 ms without)."""

    def __init__(self) -> None:
        super().__init__()
        import socket
        connect = socket.create_connection

        def create_connection(*args: Any, **kwargs: Any) -> socket.socket:
            sock = connect(*args, **kwargs)
            sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
            return sock

        socket.create_connection = create_connection
