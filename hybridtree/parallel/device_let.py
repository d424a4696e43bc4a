"""LET selection on the device, and sink groups of a tree that holds a received LET.

:func:`select_on_device` decides, for the local device tree and every other process's
particle box at once, which cells a walk against that box would accept and which leaves
it would open (the opening test of :func:`hybridtree.parallel.let.select_let`, in float64
on the device tree's moments; for the hard part, cells wholly beyond r_out are skipped
and of an opened leaf only the particles within r_out of the box travel: beyond it their
hard force on every sink of the box is exactly zero),
compacts them on the device (cl/let.cl) and downloads only what is sent: one (x, y, z, m)
row per accepted cell (with its quadrupole where the tree has them) and per particle of
an opened leaf.  :func:`let_rows` turns that into the rows that travel.

:func:`local_sink_groups` keeps, of a tree built from this process's particles and the
LET it received, the groups that hold a local particle: received entries are sources
only (a group mixing both walks its LET entries too, a few near the box's faces).
Lengths, masses: the caller's units.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import pyopencl as cl

from ..device.kernels import launch, option_sets, spread_local
from ..device.runtime import DeviceInfo, Runtime
from ..device.transfer import allocator, download
from ..gravity.tree.device_build import DeviceGroups, DeviceTree, device_groups
from ..gravity.tree.device_sort import exclusive_scan
from .let import quadrupole_points

__all__ = ["DeviceLet", "let_rows", "local_sink_groups", "select_on_device"]


@dataclass
class DeviceLet:
    """What one process sends, per receiving box (in the order of the boxes given):
    accepted cells as (x, y, z, m) float64 rows with their traceless quadrupoles
    (float32 xx yy zz xy xz yz, None for monopole trees), particles of opened leaves as
    (x, y, z, m) float64 rows (tree order)."""

    cells: list[np.ndarray]
    quads: list[np.ndarray] | None
    particles: list[np.ndarray]


def _launch(rt: Runtime, name: str, n: int, *args, defines: dict | None = None) -> None:
    """Kernel ``name`` of cl/let.cl over ``n`` work-items (kernels check their bounds)."""
    launch(rt, "let.cl", name, n, *args, defines=defines, local=spread_local(rt.info))


def let_defines(hard: bool, quad: bool | None = None, box: float | None = None) -> dict:
    """Build-time defines of cl/let.cl's selection kernels: HARD (a LET cut at a distance:
    the hard part's, or TreePM's short range), QUAD for ``let_fill`` (``quad`` not None),
    PERIODIC and BOX_L for a periodic cube of side ``box``; the file's other kernels take
    none."""
    out = {"HARD": int(hard)} if quad is None else {"QUAD": int(quad), "HARD": int(hard)}
    if box is not None:
        out.update({"PERIODIC": 1, "BOX_L": repr(float(box))})
    return out


@option_sets
def let_option_sets(info: DeviceInfo) -> list[tuple[str, dict]]:
    """cl/let.cl's builds with defines: the soft and hard LET, with and without QUAD, and
    a periodic box's."""
    return [("let.cl", let_defines(hard, quad)) for hard in (False, True)
            for quad in (None, False, True)] + [("let.cl", let_defines(True, q, 1.0))
                                                for q in (None, False)]


def _segments(rt: Runtime, offs: list[cl.Buffer], n_boxes: int, stride: int, alloc
              ) -> np.ndarray:
    """Starts of every box's segment of each exclusive scan in ``offs``, and its total
    (n_boxes + 1 per scan, concatenated), in one read back."""
    out = alloc("let_starts", 4 * (n_boxes + 1) * len(offs))
    for i, off in enumerate(offs):
        _launch(rt, "segment_starts", n_boxes + 1, np.int32(n_boxes), np.int32(stride), off,
                out, np.int32(i * (n_boxes + 1)))
    starts = np.empty((n_boxes + 1) * len(offs), np.uint32)
    cl.enqueue_copy(rt.queue, starts, out)
    return starts.astype(np.int64)


def select_on_device(tree: DeviceTree, pos: cl.Buffer, mass: cl.Buffer, boxes: np.ndarray,
                     r_out: float | None = None, alloc=None, box: float | None = None
                     ) -> DeviceLet:
    """The LET of ``tree`` for each box of ``boxes`` (m, 2, 3: lower and upper corners).

    ``pos`` (n x 3) and ``mass`` (n) are the float64 particles the tree was built from
    (caller's order): particles travel with their exact coordinates.  ``r_out``: the hard
    part's cut-off (None: the full or soft LET).  ``box``: a periodic cube of that side
    (positions and boxes in [0, box]; ``r_out`` then TreePM's r_cut): nearest-image
    distances, and cells whose radius plus r_cut reaches half the box are opened.  Needs
    double precision.
    """
    if box is not None and r_out is None:
        raise ValueError("a periodic LET is cut at the short range's r_cut (r_out)")
    rt = tree.rt
    if not rt.has_fp64:
        raise ValueError("the device LET selection needs double precision (cl_khr_fp64)")
    alloc = allocator(rt, alloc)
    m, n_cells = len(boxes), tree.n_cells
    quad = tree.cell_quad is not None
    if m == 0 or n_cells == 0:
        empty = [np.empty((0, 4)) for _ in range(m)]
        return DeviceLet(empty, [np.empty((0, 6), np.float32) for _ in range(m)] if quad
                         else None, list(empty))
    total = m * n_cells
    if m * (n_cells + 1) >= 2**31:
        raise ValueError(f"{m} boxes x {n_cells} cells exceed the LET selection's indices")
    c = [np.float64(x) for x in tree.cube.centre]
    d_boxes = alloc("let_boxes", 48 * m)
    cl.enqueue_copy(rt.queue, d_boxes, np.ascontiguousarray(boxes, np.float64).reshape(-1))
    marks = alloc("let_marks", 4 * m * (n_cells + 1))
    cl.enqueue_fill_buffer(rt.queue, marks, np.int32(0), 0, 4 * m * (n_cells + 1))
    decision = alloc("let_decision", total)
    hard = r_out is not None
    _launch(rt, "let_decide", total, np.int32(n_cells), np.int32(m), d_boxes, *c,
            np.float64(r_out if hard else 0.0), tree.cell_hi, tree.cell_lo, tree.info,
            tree.link, marks, decision, defines=let_defines(hard, box=box))
    # no read backs until every count is known: each one is a wait, and processes that
    # share a GPU wait for each other's work there
    cover, _ = exclusive_scan(rt, marks, m * (n_cells + 1), alloc=alloc, name="let_cover",
                              read_total=False)
    n_cell, n_part = alloc("let_n_cell", 4 * total), alloc("let_n_part", 4 * total)
    r = np.float64(r_out if hard else 0.0)
    _launch(rt, "let_count", total, np.int32(n_cells), np.int32(m), decision, cover, tree.info,
            d_boxes, tree.order, pos, r, n_cell, n_part, defines=let_defines(hard, box=box))
    cell_off, _ = exclusive_scan(rt, n_cell, total, alloc=alloc, name="let_cell_off",
                                 read_total=False)
    part_off, _ = exclusive_scan(rt, n_part, total, alloc=alloc, name="let_part_off",
                                 read_total=False)
    starts = _segments(rt, [cell_off, part_off], m, n_cells, alloc)
    cell_starts, part_starts = starts[: m + 1], starts[m + 1:]
    n_c, n_p = int(cell_starts[-1]), int(part_starts[-1])
    cells_b, parts_b = alloc("let_cells", 32 * n_c), alloc("let_parts", 32 * n_p)
    extra = []
    if quad:
        quads_b = alloc("let_quads", 32 * n_c)
        extra = [tree.cell_quad, quads_b]
    _launch(rt, "let_fill", total, np.int32(n_cells), np.int32(m), *c, n_cell, cell_off,
            n_part, part_off, tree.cell_hi, tree.cell_lo, tree.info, tree.order, pos, mass,
            d_boxes, r, cells_b, parts_b, *extra, defines=let_defines(hard, quad, box))
    cells, parts = np.empty((n_c, 4)), np.empty((n_p, 4))
    pairs = [(cells_b, cells), (parts_b, parts)]
    if quad:
        q8 = np.empty((n_c, 8), np.float32)
        pairs.append((quads_b, q8))
    download(rt, pairs)
    return DeviceLet(np.split(cells, cell_starts[1:-1]),
                     np.split(q8[:, :6], cell_starts[1:-1]) if quad else None,
                     np.split(parts, part_starts[1:-1]))


def let_rows(let: DeviceLet) -> tuple[np.ndarray, np.ndarray]:
    """(rows (k, 4) float64 x y z m, rows per box): for each box its cells (as six point
    masses carrying the quadrupole where there are quadrupoles,
    :func:`hybridtree.parallel.let.quadrupole_points`), then its particles."""
    chunks, counts = [], []
    for b, (cells, parts) in enumerate(zip(let.cells, let.particles)):
        if let.quads is not None and len(cells):
            qpos, qmass = quadrupole_points(cells[:, 3], cells[:, :3],
                                            let.quads[b].astype(np.float64))
            cells = np.column_stack([qpos, qmass])
        chunks += [cells, parts]
        counts.append(len(cells) + len(parts))
    rows = np.concatenate(chunks) if chunks else np.empty((0, 4))
    return rows, np.asarray(counts, np.int64)


def local_sink_groups(tree: DeviceTree, n_local: int, n_group: int, pack: bool = True
                      ) -> DeviceGroups:
    """The groups of ``tree`` (its particles: caller indices below ``n_local`` are this
    process's, the rest received LET entries) that hold at least one local particle."""
    rt = tree.rt
    if not rt.has_fp64:     # cl/let.cl is one program with float64 kernels
        raise ValueError("the device LET kernels need double precision (cl_khr_fp64)")
    alloc = allocator(rt, tree.alloc)
    g = device_groups(tree, n_group, pack)
    flag = alloc("lg_flag", 4 * max(g.n_groups, 1))
    _launch(rt, "local_groups", g.n_groups, np.int32(g.n_groups), g.ranges, tree.order,
            np.int32(n_local), flag)
    off, k = exclusive_scan(rt, flag, g.n_groups, alloc=alloc, name="lg_off")
    out = DeviceGroups(k, alloc("lg_ranges", 8 * max(k, 1)), alloc("lg_hi", 16 * max(k, 1)),
                       alloc("lg_lo", 16 * max(k, 1)), alloc("lg_half", 16 * max(k, 1)))
    _launch(rt, "pack_groups", g.n_groups, np.int32(g.n_groups), flag, off, g.ranges, g.hi,
            g.lo, g.half, out.ranges, out.hi, out.lo, out.half)
    return out
