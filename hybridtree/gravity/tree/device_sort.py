"""Device-side stable radix sort of 64-bit keys and exclusive prefix scan (cl/sort.cl).

Everything stays on the device: a sort enqueues its passes back to back and reads
nothing back; ``exclusive_scan`` reads back only the 4-byte total it returns.

Limits: ``n < 2^31`` (indices, counts and offsets are uint32 on the device); the
values of a scan must sum to less than 2^32 (the sum wraps otherwise).
"""

from __future__ import annotations

import os

from dataclasses import dataclass, replace
from types import MappingProxyType

import numpy as np
import pyopencl as cl

from ...errors import UserInputError
from ...device.kernels import kernel, launch, option_sets
from ...device.runtime import DeviceError, DeviceInfo, Runtime
from ...device.transfer import allocator, read_small

__all__ = ["MAX_N", "SortBuffers", "Tuning", "exclusive_scan", "fit_tuning", "local_bytes",
           "radix_sort", "sort_defines", "sort_input", "sort_into"]

#: Largest element count the kernels' uint32 arithmetic allows.
MAX_N = 2**31 - 1


@dataclass(frozen=True)
class Tuning:
    """Build-time sizes of the kernels in cl/sort.cl."""

    wg: int           # work-group size (a power of two)
    items: int        # keys per work-item; a sort tile is wg * items (< 2^16) keys
    scan_items: int   # values per work-item; a scan block is wg * scan_items values
    radix_bits: int   # bits per sort pass (1..8); local memory grows as 2^bits * wg
    sorted_stores: int = 1   # radix_scatter stores in the tile's sorted order (1) or not

    def __post_init__(self) -> None:
        if self.wg < 1 or self.wg & (self.wg - 1):
            raise ValueError(f"wg must be a power of two, got {self.wg}")
        if not (self.items >= 1 and self.scan_items >= 1 and self.wg * self.items < 2**16):
            raise ValueError(f"need items, scan_items >= 1 and wg * items < 65536: {self}")
        if not 1 <= self.radix_bits <= 8:
            raise ValueError(f"radix_bits must be 1..8, got {self.radix_bits}")
        if self.sorted_stores not in (0, 1):
            raise ValueError(f"sorted_stores must be 0 or 1, got {self.sorted_stores}")


#: Per device kind.  CPU: measured with PoCL 3.0 on 2 cores, 10^6 random 63-bit
#: keys: work-groups of 1..8 items sort in ~35 ms, 16 or more take 2-3x longer
#: (PoCL's work-item loops around barriers); 8-bit digits (8 passes) beat 4-bit
#: digits (16 passes) by ~1.6x.  GPU: 4-bit digits keep the per-work-item digit
#: counters (2^bits * wg ushorts) small in local memory (wider digits were slower:
#: docs/history.md §24); tiles of 2048 keys (8 a work-item) against 4096, H200, a
#: Plummer sphere's Morton keys, the scatter writing in sorted order: 1.36-1.38 /
#: 1.40-1.41 ms at 2^20, 1.76-1.77 / 1.90-1.92 ms at 2^22, 5.23-5.34 / 5.42-5.47 ms
#: at 2^24; in input order 1.82-2.02, 1.94-2.03 and 5.91-6.08 ms with tiles of 4096
#: (docs/history.md §29).  Stores in sorted order cost the 2-core machine's PoCL
#: 15-25 % more (2^20: 57-64 ms against 50-51), so CPUs store in input order.
TUNING = MappingProxyType({
    "gpu": Tuning(wg=256, items=8, scan_items=8, radix_bits=4, sorted_stores=1),
    "cpu": Tuning(wg=4, items=1024, scan_items=256, radix_bits=8, sorted_stores=0)})

def _env_tuning() -> Tuning | None:
    """HYBRIDTREE_SORT_TUNING="wg,items,scan_items,radix_bits[,sorted_stores]" (a tuning
    aid: it overrides ``TUNING`` for every device)."""
    spec = os.environ.get("HYBRIDTREE_SORT_TUNING")
    if not spec:
        return None
    try:
        return Tuning(*(int(v) for v in spec.split(",")))
    except (TypeError, ValueError) as exc:
        raise UserInputError(f"HYBRIDTREE_SORT_TUNING={spec!r}: {exc}") from exc


_SOURCE = "sort.cl"
_KERNELS = ("radix_histogram", "radix_scatter", "scan_reduce", "scan_block_sums", "scan_add")


@dataclass(frozen=True)
class _Kernels:
    """The built kernels of one tuning."""

    tuning: Tuning
    knl: dict[str, cl.Kernel]

    @property
    def wg(self) -> int:
        return self.tuning.wg

    @property
    def tile(self) -> int:
        return self.tuning.wg * self.tuning.items

    @property
    def scan_block(self) -> int:
        return self.tuning.wg * self.tuning.scan_items

    @property
    def radix_bits(self) -> int:
        return self.tuning.radix_bits

    def launch(self, rt: Runtime, name: str, n_groups: int, *args) -> None:
        """Kernel ``name`` over ``n_groups`` work-groups of the tuning's (built-in) size."""
        launch(rt, _SOURCE, name, n_groups * self.wg, *args,
               defines=sort_defines(self.tuning), local=self.wg, fixed=True)


def _local_bytes(rt: Runtime, knl: cl.Kernel) -> int:
    info = cl.kernel_work_group_info.LOCAL_MEM_SIZE
    return int(knl.get_work_group_info(info, rt.device))


def local_bytes(t: Tuning) -> int:
    """Static local memory (bytes) of the largest kernel of cl/sort.cl built with ``t``:
    radix_scatter (digits and places, counters, scan buffer, digit bases), a scan (block
    tile and buffer) or radix_histogram (counters)."""
    radix, tile, block = 1 << t.radix_bits, t.wg * t.items, t.wg * t.scan_items
    scatter = 4 * (1 + t.sorted_stores) * (tile + (tile >> 5)) + 2 * radix * t.wg + 4 * t.wg \
        + 4 * radix
    scan = 4 * (block + (block >> 5)) + 4 * t.wg
    return max(scatter, scan, 2 * radix * t.wg)


def _shrink(t: Tuning, wg_ok: bool, label: str) -> Tuning:
    """The next tuning to try when ``t`` does not fit: half the work-group with twice the
    items (the same tile) while the work-group is too large or its digit counters
    (2^bits x wg ushorts) outweigh the tile's slots in local memory; else half the items;
    else one bit less per pass (more passes)."""
    counters, slots = 2 * (1 << t.radix_bits) * t.wg, 4 * t.wg * t.items
    if t.wg > 1 and (not wg_ok or counters >= slots):
        return replace(t, wg=t.wg // 2, items=t.items * 2)
    if wg_ok and t.items * t.scan_items > 1:
        return replace(t, items=max(1, t.items // 2), scan_items=max(1, t.scan_items // 2))
    if wg_ok and t.radix_bits > 1:
        return replace(t, radix_bits=t.radix_bits - 1)
    raise DeviceError(f"{label}: no work-group size fits the sort kernels")


def fit_tuning(t: Tuning, info: DeviceInfo) -> Tuning:
    """``t`` shrunk (:func:`_shrink`) until it fits the device's work-group limit and local
    memory (:func:`local_bytes`): what the kernels are first built with."""
    while True:
        wg_ok = t.wg <= info.work_group_limit()
        if wg_ok and local_bytes(t) <= info.local_mem_limit():
            return t
        t = _shrink(t, wg_ok, info.label)


def preferred_tuning(info: DeviceInfo) -> Tuning:
    """The tuning a device starts from: ``HYBRIDTREE_SORT_TUNING``, else :data:`TUNING` of
    its kind, fitted to its limits (:func:`fit_tuning`)."""
    return fit_tuning(_env_tuning() or TUNING.get(info.kind, TUNING["gpu"]), info)


def sort_defines(t: Tuning) -> dict:
    """Build-time defines of cl/sort.cl for a tuning."""
    return {"WG": t.wg, "ITEMS": t.items, "SCAN_ITEMS": t.scan_items,
            "RADIX_BITS": t.radix_bits, "SORTED_STORES": t.sorted_stores}


@option_sets
def sort_option_sets(info: DeviceInfo) -> list[tuple[str, dict]]:
    """cl/sort.cl's build a device asks for: :data:`TUNING` of its kind, fitted (not
    ``HYBRIDTREE_SORT_TUNING``, a tuning aid)."""
    return [(_SOURCE, sort_defines(fit_tuning(TUNING.get(info.kind, TUNING["gpu"]), info)))]


def _kernels(rt: Runtime, tuning: Tuning | None = None) -> _Kernels:
    """Build (once; the runtime caches programs) a tuning that the device can run.

    The kernels fix their sizes at build time.  The preferred tuning is first fitted to
    the device's reported limits (:func:`preferred_tuning`); a kernel that still cannot
    run it (registers, a driver's own local memory) gets rebuilds with :func:`_shrink`.
    """
    t = tuning or preferred_tuning(rt.info)
    key = ("sort.cl kernels", t)        # the checks below query the driver: once a tuning
    if key in rt.launches:
        return rt.launches[key]
    while True:
        knl = {name: kernel(rt, _SOURCE, name, sort_defines(t))
               for name in _KERNELS}
        wg_ok = all(t.wg <= rt.max_work_group_size(k) for k in knl.values())
        local_ok = all(_local_bytes(rt, k) <= int(rt.device.local_mem_size) for k in knl.values())
        if wg_ok and local_ok:
            rt.launches[key] = _Kernels(t, knl)
            return rt.launches[key]
        t = _shrink(t, wg_ok, rt.info.label)


def _ceil_div(a: int, b: int) -> int:
    return -(-a // b)


def _check_n(n: int) -> int:
    n = int(n)
    if not 0 <= n <= MAX_N:
        raise ValueError(f"n must be in [0, {MAX_N}], got {n}")
    return n


def _scan_sums_nbytes(k: _Kernels, n: int) -> int:
    """Size of the block-sums scratch of a scan of n values (one slot for the total)."""
    return 4 * (_ceil_div(n, k.scan_block) + 1)


def _enqueue_scan(rt: Runtime, k: _Kernels, values: cl.Buffer, n: int, out: cl.Buffer,
                  sums: cl.Buffer) -> None:
    """Enqueue out[0..n] := exclusive scan of values[0..n), out[n] = total; n >= 1.

    ``sums`` is scratch of at least ``_scan_sums_nbytes(k, n)`` bytes.
    """
    n_blocks = _ceil_div(n, k.scan_block)
    k.launch(rt, "scan_reduce", n_blocks, values, np.uint32(n), sums)
    k.launch(rt, "scan_block_sums", 1, sums, np.uint32(n_blocks))
    k.launch(rt, "scan_add", n_blocks, values, np.uint32(n), sums, out)


def exclusive_scan(rt: Runtime, values: cl.Buffer, n: int, out: cl.Buffer | None = None,
                   *, tuning: Tuning | None = None, alloc=None,
                   name: str = "scan", read_total: bool = True
                   ) -> tuple[cl.Buffer, int | None]:
    """Exclusive prefix sum of n uint32 values; returns (out, total).

    ``out`` has n + 1 entries: out[i] = values[0] + ... + values[i - 1], out[n] = total.
    ``values`` is not modified, unless it is ``out`` (a scan in place, which then holds
    n + 1 uint32: scan_add loads a block into local memory before it writes the block,
    and out[n] is no value).  A given ``out`` must hold at least n + 1 uint32.  The total is read back (blocking, the one host round trip;
    ``read_total`` false: not read, None returned, nothing waits); everything else stays
    on the device.  Sums wrap modulo 2^32.  ``tuning``
    overrides ``TUNING[rt.info.kind]`` (tests, benchmarks).  ``alloc``: where ``out``
    (when not given) and the scratch come from, under names starting with ``name``.
    """
    n = _check_n(n)
    alloc = allocator(rt, alloc)
    if out is None:
        out = alloc(name, 4 * (n + 1))
    if n == 0:
        cl.enqueue_copy(rt.queue, out, np.zeros(1, np.uint32))
        return out, 0
    k = _kernels(rt, tuning)
    _enqueue_scan(rt, k, values, n, out, alloc(name + "_sums", _scan_sums_nbytes(k, n)))
    if not read_total:
        return out, None
    total = read_small(rt, np.empty(1, np.uint32), out, 4 * n)
    return out, int(total[0])


@dataclass
class SortBuffers:
    """Where a sort into the caller's buffers (:func:`sort_into`) runs: the sorted keys
    end in ``keys`` (ulong, n) and the order in ``order`` (uint, n); ``spare_keys`` (at
    least 8 n bytes) and ``spare_vals`` (at least 4 n bytes) are its ping-pong halves,
    free again once the sort has run (a tree build lends it buffers it fills later)."""

    keys: cl.Buffer
    order: cl.Buffer
    spare_keys: cl.Buffer
    spare_vals: cl.Buffer


@dataclass
class _SortScratch:
    """Ping-pong key and payload buffers plus histogram and scan scratch of one sort;
    pass p writes keys[p % 2] and vals[p % 2]."""

    keys: tuple[cl.Buffer, cl.Buffer]
    vals: tuple[cl.Buffer, cl.Buffer]
    hist: cl.Buffer
    offsets: cl.Buffer
    sums: cl.Buffer

    @classmethod
    def allocate(cls, alloc, k: _Kernels, n: int, n_tiles: int,
                 keys: tuple[cl.Buffer, cl.Buffer] | None = None,
                 vals: tuple[cl.Buffer, cl.Buffer] | None = None) -> _SortScratch:
        n_hist = (1 << k.radix_bits) * n_tiles
        return cls(keys=keys or (alloc("sort_keys0", 8 * n), alloc("sort_keys1", 8 * n)),
                   vals=vals or (alloc("sort_vals0", 4 * n), alloc("sort_vals1", 4 * n)),
                   # 4 * 2^radix_bits / tile bytes per key: 0.25 (CPU), 0.03 (GPU)
                   hist=alloc("sort_hist", 4 * n_hist),
                   offsets=alloc("sort_offsets", 4 * (n_hist + 1)),
                   sums=alloc("sort_sums", _scan_sums_nbytes(k, n_hist)))


def _digit_passes(key_bits: int, radix_bits: int) -> list[tuple[int, int]]:
    """(shift, mask) of every pass, least significant digit first; the last may be narrower."""
    return [(shift, (1 << min(radix_bits, key_bits - shift)) - 1)
            for shift in range(0, key_bits, radix_bits)]


def _check_bits(key_bits: int) -> int:
    key_bits = int(key_bits)
    if not 1 <= key_bits <= 64:
        raise ValueError(f"key_bits must be in [1, 64], got {key_bits}")
    return key_bits


def _enqueue_sort(rt: Runtime, k: _Kernels, keys: cl.Buffer, n: int, key_bits: int,
                  s: _SortScratch) -> tuple[cl.Buffer, cl.Buffer]:
    """Enqueue the passes of a sort of n >= 1 keys read from ``keys`` (pass 0 reads them
    and writes ``s.keys[0]``, so they may lie in ``s.keys[1]``); the buffers of the last
    pass's results."""
    n_tiles = _ceil_div(n, k.tile)
    src_keys, src_vals = keys, s.vals[1]   # pass 0 makes its own payload, src_vals is unread
    for p, (shift, mask) in enumerate(_digit_passes(key_bits, k.radix_bits)):
        dst_keys, dst_vals = s.keys[p % 2], s.vals[p % 2]
        geometry = (np.uint32(shift), np.uint32(mask), np.uint32(n_tiles))
        k.launch(rt, "radix_histogram", n_tiles, src_keys, np.uint32(n), *geometry, s.hist)
        _enqueue_scan(rt, k, s.hist, (mask + 1) * n_tiles, s.offsets, s.sums)
        k.launch(rt, "radix_scatter", n_tiles, src_keys, src_vals, np.uint32(p == 0),
                 np.uint32(n), *geometry, s.offsets, dst_keys, dst_vals)
        src_keys, src_vals = dst_keys, dst_vals
    return src_keys, src_vals


def radix_sort(rt: Runtime, keys: cl.Buffer, n: int, key_bits: int = 63,
               *, tuning: Tuning | None = None, alloc=None) -> tuple[cl.Buffer, cl.Buffer]:
    """Stable ascending sort of n ulong keys (only the low key_bits bits are used).

    Returns new buffers (sorted_keys ulong[n], order uint32[n]) with
    sorted_keys[i] = keys[order[i]]; equal keys keep their input order
    (order == numpy.argsort(keys, kind="stable")).
    ``keys`` is only read.  Bits at and above ``key_bits`` (1..64) are ignored for
    the ordering but kept in ``sorted_keys``.  Cost: ceil(key_bits / radix_bits)
    passes (radix_bits = 4 on GPUs, 8 on CPUs, see ``TUNING``) of 5 kernel
    launches each, all enqueued without waiting and with no read-back; the caller
    synchronises (reading the results does).  Device memory: 24 bytes per key
    during the sort (two ping-pong pairs), 12 of them kept as the results
    (:func:`sort_into` sorts in the caller's buffers instead).
    ``tuning`` overrides ``TUNING[rt.info.kind]`` (tests, benchmarks).  ``alloc``: a
    :class:`hybridtree.device.transfer.Workspace` for every buffer (the results are then
    workspace buffers too, valid until its next sort).
    """
    n = _check_n(n)
    key_bits = _check_bits(key_bits)
    if n == 0:
        return rt.empty(0), rt.empty(0)
    k = _kernels(rt, tuning)
    s = _SortScratch.allocate(allocator(rt, alloc), k, n, _ceil_div(n, k.tile))
    return _enqueue_sort(rt, k, keys, n, key_bits, s)


def _ping_pong(n_passes: int, bufs: SortBuffers
               ) -> tuple[tuple[cl.Buffer, cl.Buffer], tuple[cl.Buffer, cl.Buffer]]:
    """(keys, vals) pairs for :class:`_SortScratch` whose last pass writes ``bufs.keys``
    and ``bufs.order``: pass p writes pair[p % 2]."""
    last = (n_passes - 1) % 2
    keys = (bufs.keys, bufs.spare_keys) if last == 0 else (bufs.spare_keys, bufs.keys)
    vals = (bufs.order, bufs.spare_vals) if last == 0 else (bufs.spare_vals, bufs.order)
    return keys, vals


def sort_input(rt: Runtime, bufs: SortBuffers, key_bits: int = 63,
               tuning: Tuning | None = None) -> cl.Buffer:
    """The buffer of ``bufs`` that :func:`sort_into` reads its keys from (``keys`` or
    ``spare_keys``, by the parity of the passes): the caller writes its n keys there, and
    no separate buffer of unsorted keys is needed."""
    k = _kernels(rt, tuning)
    keys, _ = _ping_pong(len(_digit_passes(_check_bits(key_bits), k.radix_bits)), bufs)
    return keys[1]


def sort_into(rt: Runtime, bufs: SortBuffers, n: int, key_bits: int = 63, *,
              tuning: Tuning | None = None, alloc=None) -> None:
    """:func:`radix_sort` of the n keys the caller wrote into :func:`sort_input`'s buffer,
    in the caller's buffers: the sorted keys end in ``bufs.keys``, the order in
    ``bufs.order``; ``bufs.spare_*`` and the input are overwritten.  Only the histograms
    (0.25 bytes per key on a CPU, 0.03 on a GPU) come from ``alloc``.  Enqueued only."""
    n = _check_n(n)
    key_bits = _check_bits(key_bits)
    if n == 0:
        return
    k = _kernels(rt, tuning)
    passes = len(_digit_passes(key_bits, k.radix_bits))
    keys, vals = _ping_pong(passes, bufs)
    s = _SortScratch.allocate(allocator(rt, alloc), k, n, _ceil_div(n, k.tile), keys, vals)
    out = _enqueue_sort(rt, k, keys[1], n, key_bits, s)
    assert out[0] is bufs.keys and out[1] is bufs.order
