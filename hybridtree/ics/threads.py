"""Blocks of a generated model drawn by several threads at once: numpy's Generator and
its array functions release the GIL while they fill large arrays, so the blocks (each
with its own Generator) draw on every core; their order, and so the model's bits, stay
those of one thread."""

from __future__ import annotations

import os
from collections import deque
from concurrent.futures import ThreadPoolExecutor
from typing import Any, Callable, Iterable, Iterator

__all__ = ["draw_threads", "ordered_map"]

def draw_threads() -> int:
    """Threads that draw blocks: the cores this process may run on
    (``HYBRIDTREE_DRAW_THREADS`` overrides it; 1 draws in the calling thread)."""
    text = os.environ.get("HYBRIDTREE_DRAW_THREADS", "")
    if text.strip():
        try:
            value = int(text)
        except ValueError:
            value = 0
        if value < 1:
            from ..errors import UserInputError
            raise UserInputError(f"HYBRIDTREE_DRAW_THREADS must be an integer >= 1, got "
                                 f"{text!r}")
        return value
    try:
        return max(1, len(os.sched_getaffinity(0)))
    except (AttributeError, OSError):
        return max(1, os.cpu_count() or 1)


def ordered_map(fn: Callable[[Any], Any], items: Iterable[Any], threads: int | None = None
                ) -> Iterator[Any]:
    """``fn(item)`` for each of ``items``, in their order, computed by ``threads``
    threads (default :func:`draw_threads`) at most 2·threads items ahead of the one
    taken, so that no more than that many results wait in memory."""
    threads = draw_threads() if threads is None else threads
    if threads <= 1:
        yield from map(fn, items)
        return
    it = iter(items)
    with ThreadPoolExecutor(threads, thread_name_prefix="hybridtree-draw") as pool:
        pending: deque = deque()
        try:
            for item in it:
                pending.append(pool.submit(fn, item))
                if len(pending) >= 2 * threads:
                    yield pending.popleft().result()
            while pending:
                yield pending.popleft().result()
        finally:
            for f in pending:       # a consumer that stops early leaves no draw running
                f.cancel()
