"""Refit a device tree to moved particles: the cells kept, their moments redone.

GADGET-2's dynamic tree update.  A block-step substep forces only its active particles
(:mod:`hybridtree.integrate.timebins`), but a build sorts and splits all N of them
again; a refit keeps the last build's topology (sort order, keys, cells, links, cube)
and redoes only what depends on the positions: the float32 hi/lo pairs of the current
float64 positions relative to the same cube centre, in tree order (cl/prepare.cl
``split_gather``: ``split_sources`` then ``gather``, in one pass) and every cell's mass,
centre of mass, quadrupole, S_eff and bounding radius, bottom-up (cl/treebuild.cl
``cell_moments`` with ``ext``).

Particles that left their cells: a build's cell holds its particles in its cube of
side l about its geometric centre, and the opening tests rely on that alone (S_eff =
(l / theta + s)^2, radius s + (√3/2) l, s = |com − centre|; the relative criterion takes
its l from the radius).  A refit finds each cell's box, the bounding box of its
particles (bottom-up: a leaf's particles, a cell's children's boxes), and where a
particle left the cell's cube it takes the tighter (in l / theta + s) of two cubes that
hold them all in place of (l, centre): the cube grown about the geometric centre to
l_eff = 2 h (h the max-norm distance of the box's faces from that centre; until session
40 the only choice), or the built cube moved to the box's centre, its side max(l, the
box's longest side), s measured from that centre.  The same guarantee for the cells as
they now are, and never a cube tighter than the build's, so the walk's error stays that
of a build at the same theta; a loose tree only costs more interactions.  The moved
cube matters where the particles of a cell moved together (a galaxy's rotation, a
satellite's orbit): a cube grown about the old centre opens over the whole
displacement, the moved one only over the cell's spread.  Without either a cell may be
accepted by a sink that lies inside it (its own mass in a multipole).

Units: the caller's.  Needs double precision on the device (positions are float64).
"""

from __future__ import annotations

import numpy as np
import pyopencl as cl

from ...device.kernels import launch, spread_local
from ...device.transfer import allocator
from .device_build import DeviceArrays, DeviceTree, device_moments, group_boxes
from .device_tree import keep_cell_keys

__all__ = ["KeptTree", "looseness", "refit_device_tree"]


def refit_device_tree(tree: DeviceTree, particles: DeviceArrays) -> DeviceTree:
    """Refit ``tree`` in place to ``particles`` (the same particles in the caller's order
    as when it was built, at their current float64 positions on the device; masses are
    taken anew too) and return it.  Everything is enqueued on the tree's queue, nothing
    read back, nothing allocated but six floats per cell, the cells' boxes (where the
    tree's buffers came from a :class:`hybridtree.device.transfer.Workspace`: allocated
    once) and, where its
    sorted keys were let go, at the first refit its cells' keys (8 bytes a cell:
    :func:`.device_tree.keep_cell_keys`).  The tree's cached sink groups keep their ranges
    and get boxes around the moved particles.  ``tree.cell_ext`` then holds each cell's
    box (module docstring)."""
    rt, n = tree.rt, tree.n
    if particles.n != n:
        raise ValueError(f"a refit needs the tree's {n} particles, got {particles.n}")
    assert (particles.eps is None) == (tree.cell_eps is None), \
        "a refit keeps the build's softening: one per particle or one for all"
    if n == 0:
        return tree
    alloc = allocator(rt, tree.alloc)
    if not rt.has_fp64:         # prepare.cl is float64 throughout
        raise ValueError("a refit needs double precision (cl_khr_fp64), which "
                         f"{rt.info.label} lacks")
    # split_sources then gather in one pass: the same bits (upload_sources, build_device_tree)
    assert tree.cube_d is not None, "a tree built with double precision has its cube there"
    per_eps = [particles.eps] if particles.eps is not None else []
    keep_cell_keys(tree)        # from the pairs as built, before they move
    launch(rt, "prepare.cl", "split_gather", n, np.int32(n), tree.order, particles.pos,
           particles.mass, np.int32(particles.mass_step), tree.cube_d, *per_eps,
           tree.src_hi, tree.src_lo,
           local=spread_local(rt.info), defines={"PER_EPS": 1} if per_eps else None)
    ext = alloc("cell_ext", 24 * tree.n_cells)
    device_moments(tree, ext)
    tree.cell_ext = ext
    for g in tree.groups.values():
        group_boxes(tree, g)
    return tree


def looseness(tree: DeviceTree) -> float:
    """max(1, 2 h / l) of the root after a refit (1 after a build), h the max-norm
    distance of its box's faces from its centre: how much the refit grew the root's cube
    (one small read back)."""
    if tree.cell_ext is None or tree.n == 0:
        return 1.0
    box = np.empty(6, np.float32)
    cl.enqueue_copy(tree.rt.queue, box, tree.cell_ext, src_offset=0)
    return max(1.0, 2.0 * float(np.abs(box).max()) / tree.cube.side)


class KeptTree:
    """The last tree a force engine built for a device state, and whether a force of
    some particles may refit it instead of building anew: while the forces computed on
    refits of it, this one included, stay within ``fraction`` × N (0: build for every
    force).  GADGET-2's rule (TreeDomainUpdateFrequency) counts the forces since the
    build without this one, the build's own among them: after a substep that built, the
    next small one builds too, and the first force past the budget still refits,
    however many particles it has: the large substeps that follow a deep bin's small
    ones, where a refit costs the most walk (docs/history.md §25).  Here a force of
    more than ``fraction`` × N particles always builds, and the refits are the small
    substeps', whose walks are short.  Where the caller does not say how many particles
    are active the force counts as none.  Every force of all particles builds and starts
    the count at 0, so the choice depends only on what happened since the last such
    force: a restart at a step's end makes the same choices
    (:meth:`hybridtree.gravity.engine.ForceEngine.forces_known` builds the tree a
    restart's substeps refit)."""

    def __init__(self, fraction: float):
        self.fraction = float(fraction)
        self.tree: DeviceTree | None = None
        self.owner = None           # the state whose particles the tree holds
        self.since = 0              # forces computed on refits since the tree was built
        self.fresh = True           # the last force used the tree as built

    def reusable(self, owner, n: int, theta: float, count: int | None = None) -> bool:
        """Whether a force of ``count`` of ``owner``'s ``n`` particles (None: not known)
        may refit the tree (built for them with opening angle ``theta``)."""
        t = self.tree
        return (self.fraction > 0 and t is not None and self.owner is owner and t.n == n
                and t.theta == float(theta)
                and self.since + (count or 0) <= self.fraction * n)

    def refit(self, particles: DeviceArrays) -> DeviceTree:
        """The tree refitted to ``particles`` (:func:`refit_device_tree`)."""
        self.fresh = False
        return refit_device_tree(self.tree, particles)

    def built(self, owner, tree: DeviceTree) -> None:
        self.tree, self.owner, self.since, self.fresh = tree, owner, 0, True

    def forced(self, m: int) -> None:
        """``m`` more forces computed on the tree (counted where it was refitted)."""
        if not self.fresh:
            self.since += int(m)

    def forget(self) -> None:
        """The tree's buffers are about to be reused for another tree."""
        self.tree = self.owner = None
