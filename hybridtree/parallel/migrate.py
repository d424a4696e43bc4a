"""Particles that change domain, moved between processes whose state is on the device.

The owner of every particle is computed on the device from the domain cuts
(cl/let.cl ``owners``: the same rule as :meth:`hybridtree.parallel.domain.Domains.owner`);
only the migrants are packed, row by row with everything they carry (position, velocity,
mass, ID, accelerations, potential, and their new owner), downloaded through pinned
memory, sent with one Alltoallv, uploaded and appended; the particles that stay are
compacted in place on the device, in their order, and never leave it.  The samples of
the decomposition are gathered the same way (:func:`sample_positions`).
Units: the state's.
"""

from __future__ import annotations

import numpy as np
import pyopencl as cl

from ..device.kernels import launch, spread_local
from ..state import DeviceState
from ..device.transfer import allocator, download, upload
from ..gravity.tree.device_sort import exclusive_scan
from .comm import Comm
from .domain import Domains

__all__ = ["domain_cuts", "migrate", "sample_positions"]


def domain_cuts(domains: Domains) -> np.ndarray:
    """The inner boundaries of ``domains`` as the ``owners`` kernel reads them: x, then y
    per slab, then z per column (float64)."""
    return np.concatenate([domains.x[1:-1], domains.y[:, 1:-1].reshape(-1),
                           domains.z[:, :, 1:-1].reshape(-1), [0.0]])   # never empty


def migrate(comm: Comm, state: DeviceState, domains: Domains, alloc=None) -> int:
    """Move the particles of ``state`` that ``domains`` gives to other processes there
    (collective); returns how many left this process."""
    rt, n = state.rt, state.n
    alloc = allocator(rt, alloc)
    local = spread_local(rt.info)           # cl/let.cl's element-wise kernels
    nx, ny, nz = domains.shape
    cols = state.columns() + [("owner", 8, alloc("mig_owner", 8 * max(n, 1)))]
    stride = sum(_words(b) for _, b, _ in cols)      # 8-byte words of a packed row
    flag = alloc("mig_flag", 4 * max(n, 1))
    cuts = np.ascontiguousarray(domain_cuts(domains))
    d_cuts = alloc("mig_cuts", cuts.nbytes)
    cl.enqueue_copy(rt.queue, d_cuts, cuts)
    launch(rt, "let.cl", "owners", n, np.int32(n), state.pos, np.int32(nx), np.int32(ny),
           np.int32(nz), d_cuts, np.int32(comm.rank), cols[-1][2], flag, local=local)
    off, n_out = exclusive_scan(rt, flag, n, alloc=alloc, name="mig_off")
    rows = np.empty((n_out, stride), np.uint64)
    if n_out:
        packed = alloc("mig_packed", 8 * stride * n_out)
        stay = alloc("mig_stay", 8 * 3 * n)
        field = 0
        for name, size, buf in cols:
            kname, width = _kernel("split_rows", size)
            launch(rt, "let.cl", kname, n, np.int32(n), width, flag, off, buf,
                   np.int32(stride), np.int32(field), packed, stay, local=local)
            if n > n_out and name != "owner":       # the owners of those who stay: unused
                cl.enqueue_copy(rt.queue, buf, stay, byte_count=size * (n - n_out))
            field += _words(size)
        download(rt, [(packed, rows)])
    owner = rows[:, -1].view(np.int64)
    order = np.argsort(owner, kind="stable")
    counts = np.bincount(owner, minlength=comm.size).astype(np.int64)
    recv = comm.alltoallv(rows[order], counts)
    state.n = n - n_out
    m = len(recv)
    if m:
        state.reserve(state.n + m)
        (d_recv,) = upload(rt, [recv], ["mig_recv"])
        field = 0
        for _name, size, buf in state.columns():
            kname, width = _kernel("unpack_rows", size)
            launch(rt, "let.cl", kname, m, np.int32(m), width, d_recv,
                   np.int32(stride), np.int32(field), buf, np.int32(state.n), local=local)
            field += _words(size)
        state.n += m
    return n_out


def _words(size: int) -> int:
    """8-byte words of a packed row that a field of ``size`` bytes per particle takes."""
    return -(-size // 8)


def _kernel(name: str, size: int) -> tuple[str, np.int32]:
    """(kernel, width argument) that moves a field of ``size`` bytes per particle: whole
    8-byte words, or the bytes of a field of another width (a state's uint32 IDs, uint8
    types, float32 velocities: 12 bytes in the first of its two words and the next)."""
    if size % 8 == 0:
        return name, np.int32(size // 8)
    return name + "_narrow", np.int32(size)


def sample_positions(state: DeviceState, idx: np.ndarray, alloc=None) -> np.ndarray:
    """Positions (m, 3) of the particles ``idx`` of ``state``, gathered on the device."""
    rt = state.rt
    alloc = allocator(rt, alloc)
    idx = np.ascontiguousarray(idx, np.int32)
    out = np.empty((len(idx), 3))
    if len(idx) == 0:
        return out
    d_idx, d_out = alloc("sample_idx", idx.nbytes), alloc("sample_pos", out.nbytes)
    cl.enqueue_copy(rt.queue, d_idx, idx)
    launch(rt, "let.cl", "take_rows", len(idx), np.int32(len(idx)), np.int32(3), d_idx,
           state.pos, d_out, local=spread_local(rt.info))
    cl.enqueue_copy(rt.queue, out, d_out)
    return out
