"""Host <-> device copies through page-locked (pinned) staging memory.

A GPU copies pageable host memory through the driver's own small bounce buffers, at a
fraction of the bus's speed (on the H100 machine: docs/benchmarks.md).  Here every
runtime keeps one page-locked host area (an ``ALLOC_HOST_PTR`` buffer, mapped once) and
copies pass through it in chunks: host threads copy chunk k between the caller's array
and the pinned area while the device's DMA engine moves chunk k - 1, so a transfer
costs about the larger of the two, not their sum.

Used where :func:`use_staging` says so (GPUs by default); on CPU devices the "device"
memory is host memory and the plain copy is as fast.  The results are the same bytes
either way (tested on the CPU device with staging forced on).
"""

from __future__ import annotations

import os
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from typing import Callable

import numpy as np
import pyopencl as cl

from ..errors import UserInputError
from .runtime import Runtime

__all__ = ["STAGING", "CopyOptions", "Copies", "Workspace", "allocator", "copies", "download",
           "read_counts", "read_small", "release", "scratch", "upload", "use_staging", "wait_for"]

#: Bytes per pipelined chunk (H100 machine, docs/benchmarks.md: 4 MB moved 29.6 GB/s up
#: at N = 2^22 against 21.1 GB/s for 16 MB, and the same at 2^24).
CHUNK = 4 << 20

#: Staging policy: "auto" (GPUs only), "always" or "never"; the environment variable
#: HYBRIDTREE_STAGING overrides it.
STAGING = "auto"

#: Chunks the pinned area holds at most: copies of any size pass through it as a ring
#: (a chunk's slot is filled again once its copy has run).  An area as large as the
#: transfer, as before, took 60-75 bytes per particle of the H200's memory besides the
#: run's buffers (NVIDIA's driver backs an ALLOC_HOST_PTR buffer on the device too).
STAGING_SLOTS = 16


@dataclass(frozen=True)
class CopyOptions:
    """How a runtime's copies go: ``chunk`` bytes per pipelined chunk (:data:`CHUNK`),
    ``slots`` chunks the pinned area holds at most (:data:`STAGING_SLOTS`), ``staging``
    the policy (:data:`STAGING`; the environment variable HYBRIDTREE_STAGING overrides
    it)."""

    chunk: int = CHUNK
    slots: int = STAGING_SLOTS
    staging: str = STAGING


def use_staging(rt: Runtime) -> bool:
    """Whether copies to and from ``rt``'s device go through pinned staging memory."""
    policy = os.environ.get("HYBRIDTREE_STAGING", copies(rt).options.staging)
    if policy not in ("auto", "always", "never"):
        raise UserInputError(f"HYBRIDTREE_STAGING must be auto, always or never, got {policy!r}")
    return policy == "always" or (policy == "auto" and rt.info.kind == "gpu")


class _Staging:
    """One runtime's pinned host area, grown on demand, and the copies still using it."""

    def __init__(self) -> None:
        self.buffer: cl.Buffer | None = None
        self.mapping = None                  # pyopencl MemoryMap of the area
        self.host: np.ndarray = np.empty(0, np.uint8)
        self.pending: list[cl.Event] = []

    def idle(self) -> None:
        """Wait until no enqueued copy uses the area."""
        if self.pending:
            cl.wait_for_events(self.pending)
            self.pending = []

    def unmap(self, rt: Runtime) -> None:
        """Unmap the area (before it is dropped or replaced)."""
        self.idle()
        if self.mapping is not None:
            self.mapping.release(rt.queue)
            rt.queue.finish()
            self.mapping = None

    def area(self, rt: Runtime, nbytes: int, cap: int = STAGING_SLOTS * CHUNK) -> np.ndarray:
        """The pinned area (uint8, at least ``nbytes``; doubled when it grows, up to
        ``cap`` bytes) once no earlier copy uses it."""
        self.idle()
        if len(self.host) < nbytes:
            self.unmap(rt)
            size = max(nbytes, min(2 * len(self.host), cap))
            mf = cl.mem_flags
            self.buffer = None
            self.buffer = rt.buffer(mf.READ_WRITE | mf.ALLOC_HOST_PTR, size, owner="staging")
            self.host, _ = cl.enqueue_map_buffer(
                rt.queue, self.buffer, cl.map_flags.READ | cl.map_flags.WRITE, 0, (size,),
                np.uint8, is_blocking=True)
            self.mapping = self.host.base
        return self.host


class Copies:
    """One runtime's copies (:attr:`Runtime.copies`): their ``options``, its pinned
    ``staging`` area, its kept ``scratch`` buffers (name -> (buffer, bytes)) and the host
    threads that copy chunks."""

    def __init__(self, options: CopyOptions = CopyOptions()) -> None:
        self.options = options
        self.staging = _Staging()
        self.scratch: dict[str, tuple[cl.Buffer, int]] = {}
        self._pool: ThreadPoolExecutor | None = None

    def threads(self) -> ThreadPoolExecutor:
        """Host threads for the chunk copies (numpy releases the GIL while it copies)."""
        if self._pool is None:
            self._pool = ThreadPoolExecutor(max_workers=max(1, min(8, os.cpu_count() or 1)),
                                            thread_name_prefix="hybridtree-copy")
        return self._pool

    def area(self, rt: Runtime, slots: int) -> np.ndarray:
        """The pinned area for ``slots`` chunks (:meth:`_Staging.area`)."""
        o = self.options
        return self.staging.area(rt, slots * o.chunk, o.slots * o.chunk)


def copies(rt: Runtime) -> Copies:
    """``rt``'s copies, made with the default :class:`CopyOptions` at the first call
    where the runtime was not given its own."""
    c = rt.copies
    if c is None:
        c = rt.copies = Copies()
    return c

#: A kept buffer that must grow gets this fraction more than asked for (up to the
#: device's largest allocation): sizes that follow the particles (groups, cells, lists)
#: drift up and down from step to step, and on NVIDIA's driver replacing a buffer of GBs
#: stalled the host for 2-6 ms on every other step at 2^22 (round 65, session 21).
GROWTH = 0.125


def _grown(rt: Runtime, held: int, nbytes: int) -> int:
    """Bytes of a kept buffer that holds ``held`` bytes and must hold ``nbytes``: exact
    the first time, with :data:`GROWTH` headroom when it grows."""
    nbytes = max(int(nbytes), 4)
    if not held:
        return nbytes
    return max(nbytes, min(nbytes + int(GROWTH * nbytes), int(rt.device.max_mem_alloc_size)))


def scratch(rt: Runtime, name: str, nbytes: int) -> cl.Buffer:
    """A device buffer of at least ``nbytes`` kept per runtime and ``name`` (grown with
    :data:`GROWTH` headroom, never shrunk), for data consumed by the kernels enqueued right
    after it is filled: the in-order queue runs those before any later use of the same
    name."""
    kept = copies(rt).scratch
    buf, held = kept.get(name, (None, 0))
    if buf is None or held < nbytes:       # sizes kept here: no driver query per call
        held = _grown(rt, held, nbytes)
        # the old buffer let go before the new is made: OpenCL frees it once the commands
        # enqueued on it are done, and the two are never held together
        buf = None
        kept.pop(name, None)
        buf = rt.empty(held)
        kept[name] = buf, held
    return buf


class Workspace:
    """Named device buffers owned by one user (a force engine), grown on demand (with
    :data:`GROWTH` headroom) and never shrunk: a step that needs the same sizes as the
    last allocates nothing.  Call it like :func:`scratch`: ``work(name, nbytes)``."""

    def __init__(self, rt: Runtime) -> None:
        self.rt = rt
        self.buffers: dict[str, cl.Buffer] = {}
        self._held: dict[str, int] = {}
        # a weak reference to what was last made in these buffers (a tree), which the
        # next user lets go before it reuses them (gravity/tree/device_build.py)
        self.last: Callable[[], object | None] | None = None

    def __call__(self, name: str, nbytes: int) -> cl.Buffer:
        held = self._held.get(name, 0)
        if name not in self._held or held < nbytes:   # sizes kept here, as in scratch
            held = self._held[name] = _grown(self.rt, held, nbytes)
            self.buffers.pop(name, None)     # let go first, as in scratch
            self.buffers[name] = self.rt.empty(held)
        return self.buffers[name]

    @property
    def nbytes(self) -> int:
        return sum(b.size for b in self.buffers.values())


def allocator(rt: Runtime, alloc=None):
    """``alloc`` (a :class:`Workspace`) where given, else an allocator with its call
    signature that makes a new buffer each time (for trees that must outlive the next
    build)."""
    return alloc if alloc is not None else (lambda name, nbytes: rt.empty(nbytes))


def release(rt: Runtime) -> None:
    """Let go of ``rt``'s kept scratch buffers and pinned area (a large run's last force
    evaluation leaves them allocated; the next transfer or walk makes them again)."""
    rt.queue.finish()
    c = copies(rt)
    c.scratch.clear()
    c.staging.unmap(rt)
    c.staging = _Staging()


def _bytes(a: np.ndarray) -> np.ndarray:
    return a.reshape(-1).view(np.uint8)


def _chunks(sizes: list[int], chunk: int):
    """(item, offset in item, offset in staging, length) over all items, ``chunk`` bytes
    at a time."""
    at = 0
    for i, size in enumerate(sizes):
        for off in range(0, size, chunk):
            n = min(chunk, size - off)
            yield i, off, at + off, n
        at += size


def upload(rt: Runtime, arrays: list[np.ndarray], names: list[str | None]) -> list[cl.Buffer]:
    """Device copies of ``arrays`` (made C-contiguous), in :func:`scratch` buffers
    ``names``, or in new buffers of the caller's where a name is None.

    The copies are enqueued, not waited for: kernels enqueued next see the data, and
    the caller may change its arrays as soon as this returns.
    """
    arrays = [np.ascontiguousarray(a) for a in arrays]
    bufs = [rt.empty(a.nbytes) if name is None else scratch(rt, name, a.nbytes)
            for a, name in zip(arrays, names)]
    if not use_staging(rt):
        for a, b in zip(arrays, bufs):
            if a.nbytes:
                cl.enqueue_copy(rt.queue, b, a, is_blocking=False)
        rt.queue.finish()        # the caller may change its arrays after we return
        return bufs
    c = copies(rt)
    state, chunk = c.staging, c.options.chunk
    src = [_bytes(a) for a in arrays]
    plan = list(_chunks([a.nbytes for a in arrays], chunk))
    slots = max(1, min(len(plan), c.options.slots))
    lag = slots // 2            # a slot is filled again this many chunks after its copy
    area = c.area(rt, slots)
    pool = c.threads()

    def fill(k: int) -> None:
        i, o, _, n = plan[k]
        at = (k % slots) * chunk
        np.copyto(area[at:at + n], src[i][o:o + n])

    # the host's threads only copy; every wait is this thread's (Oclgrind runs commands
    # in the thread that waits, and two at once abort it)
    filled = {k: pool.submit(fill, k) for k in range(slots)}
    enqueued: dict[int, cl.Event] = {}
    for k, (i, o, _, n) in enumerate(plan):
        filled.pop(k).result()
        at = (k % slots) * chunk
        enqueued[k] = cl.enqueue_copy(rt.queue, bufs[i], area[at:at + n], dst_offset=o,
                                      is_blocking=False)
        state.pending.append(enqueued[k])
        rt.queue.flush()
        old = k - lag
        if old >= 0 and old + slots < len(plan):
            enqueued.pop(old).wait()    # its slot free: the chunk after it there
            filled[old + slots] = pool.submit(fill, old + slots)
    return bufs


def download(rt: Runtime, pairs: list[tuple[cl.Buffer, np.ndarray]]) -> None:
    """Copy each device buffer into its C-contiguous host array (all bytes of the array)."""
    pairs = [(b, a) for b, a in pairs if a.nbytes]
    for _, a in pairs:
        if not a.flags.c_contiguous:
            raise ValueError("download needs C-contiguous host arrays")
    if not use_staging(rt):
        for b, a in pairs:
            cl.enqueue_copy(rt.queue, a, b)
        return
    c = copies(rt)
    chunk = c.options.chunk
    dst = [_bytes(a) for _, a in pairs]
    plan = list(_chunks([a.nbytes for _, a in pairs], chunk))
    slots = max(1, min(len(plan), c.options.slots))
    lag = slots // 2            # a slot is fetched into again this many chunks after it landed
    area = c.area(rt, slots)
    pool = c.threads()

    def fetch(k: int) -> cl.Event:
        """Chunk k's copy from the device into its slot, enqueued."""
        i, o, _, n = plan[k]
        at = (k % slots) * chunk
        return cl.enqueue_copy(rt.queue, area[at:at + n], pairs[i][0], src_offset=o,
                               is_blocking=False)

    def land(k: int) -> None:
        i, o, _, n = plan[k]
        at = (k % slots) * chunk
        np.copyto(dst[i][o:o + n], area[at:at + n])

    # as upload's: the threads only copy, this thread waits
    fetched = {k: fetch(k) for k in range(slots)}
    rt.queue.flush()
    landing = {}
    for k in range(len(plan)):
        fetched.pop(k).wait()
        landing[k] = pool.submit(land, k)
        old = k - lag
        if old >= 0 and old + slots < len(plan):
            landing.pop(old).result()       # its slot free: the chunk after it there
            fetched[old + slots] = fetch(old + slots)
            rt.queue.flush()
    for job in landing.values():
        job.result()


def read_small(rt: Runtime, out: np.ndarray, buf: cl.Buffer, offset: int = 0) -> np.ndarray:
    """``out`` filled from ``buf`` at byte ``offset``, the host waiting until the copy has
    run: a few numbers the host needs before it can go on (a count, a box, the longest
    list).  Every such wait of a run goes through here, so that scripts/tune/kernels.py
    times them all.  (Polling the copy's status instead of the driver's wait gained
    nothing on the H100: 0.084 ms blocking against 0.110 ms polled for a 4-byte read
    after a 0.068 ms kernel, scripts/tune/readlat.py, docs/history.md §21.)"""
    wait_for(cl.enqueue_copy(rt.queue, out, buf, src_offset=offset, is_blocking=False))
    return out


def read_counts(rt: Runtime, places: list[tuple[cl.Buffer, int]]) -> np.ndarray:
    """uint32 values at (buffer, byte offset) ``places``, read in one wait: copied on the
    device into one small buffer first.  (A non-blocking copy straight to the host would
    not do: pyopencl's event of a copy to or from host memory waits for the copy when it
    is dropped, so each would be a wait of its own; session 29's review found three.)"""
    k = len(places)
    out = scratch(rt, "read_counts", 4 * max(k, 1))
    for i, (buf, offset) in enumerate(places):
        cl.enqueue_copy(rt.queue, out, buf, src_offset=offset, dst_offset=4 * i, byte_count=4)
    return read_small(rt, np.empty(k, np.uint32), out)


def wait_for(event: cl.Event) -> None:
    """Until ``event`` has run.  The seam of the host's waits: every wait of
    :func:`read_small` goes through this module function, so that scripts/tune/kernels.py
    (timing them) and the tests (counting them) wrap it, not a private name."""
    event.wait()
