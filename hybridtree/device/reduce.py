"""Deterministic float64 reductions of a device-resident state, with numpy twins.

A float64 sum depends on its order.  The usual device reduction (strided per work-item
sums, then a tree in local memory) has an order that changes with the work-group size,
the number of compute units and the device, so a GPU run, a CPU run and a restart on
other hardware would drift apart in the last bits, and from there (the net force
removed each step, the energy check) in everything.  Here each sum has one fixed
order (cl/reduce.cl): blocks of :data:`BLOCK` consecutive terms summed sequentially,
then blocks of those block sums, until one is left.  numpy's ``cumsum`` over the
zero-padded blocks rounds in exactly that sequence, so :func:`host_block_sum` and the
``host_*`` twins give the device's bits: a device run and a host run of the same
particles agree bit for bit, and a restart reproduces the run.

Units: internal (G = 1); masses, lengths and velocities as the caller's arrays.
Device buffers are float64, (n, 3) row-major for vectors.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import pyopencl as cl

from .kernels import kernel, launch, option_sets
from .multisection import PASSES, TRIALS, checked_fractions, multisect
from .runtime import DeviceInfo, Runtime, fit_work_group
from .reduce_sets import SetReductions, read_radii
from .reduce_twins import (BLOCK, host_block_sum, host_lagrangian_radii, host_moments,
                           host_net_acceleration, moments_of_sums, net_of_sums)
from .transfer import read_small, scratch

__all__ = ["BLOCK", "TRIALS", "GroupCounts", "Reducer", "host_block_sum", "host_lagrangian_radii",
           "host_moments", "host_net_acceleration", "reducer"]

#: The kernels of one level (a work-item per output value, not per block).
_LEVEL_OPS = ("reduce_rows", "reduce_rows_max")

#: Level-1 kernels with a twin that does levels 1 and 2 at once (cl/reduce.cl LEVEL12,
#: ``name + "2"``), where its local rows (8 K BLOCK bytes) take at most this many bytes
#: (FUSED there): the level-1 rows, 8 K / BLOCK bytes a particle (2.6 for the radii's 21
#: sums), never reach global memory, and a level's launch is saved.
_FUSED = ("net_terms", "net_terms4", "moment_terms", "moment_terms4", "enclosed_terms")
_FUSED_LOCAL = 16384


@dataclass(frozen=True)
class GroupCounts:
    """A walk's interaction counts per sink group (cl/walkcommon.cl SINK_COUNTS 0): the
    ``n_groups`` groups' sinks ``ranges`` (int2 first, count), the list entries each of
    their sinks met ``info`` (int2 entries, cells), each sink's caller index ``caller``
    (uint32; only those below ``keep`` count) and ``own`` (1: each sink met itself, no
    interaction); summed as per-sink counts (:meth:`Reducer.count_sum`).  The buffers are
    a walk's, valid until the next walk."""

    n_groups: int
    ranges: cl.Buffer | None
    info: cl.Buffer | None
    caller: cl.Buffer | None
    keep: int
    own: int


def reduce_work_group(info: DeviceInfo) -> int:
    """Work-group size of the reductions (cl/reduce.cl's WG, count_sum's fixed size): 256
    on GPUs, 64 on CPUs, within the device's work-group limit and local memory (16 bytes
    per work-item), a power of two (count_sum's tree reduction halves it)."""
    return fit_work_group(256 if info.kind == "gpu" else 64, info.work_group_limit(),
                          info.local_mem_limit() // 16)


def reduce_defines(wg: int, nr: int = 3 * TRIALS, sum_mode: int = 0) -> dict:
    """Build-time defines of cl/reduce.cl: BLOCK, NR (trial radii per enclosed-mass pass:
    fractions x :data:`TRIALS`), WG (:func:`reduce_work_group`), and ORDERED_SUMS where
    the device probe found that the device reorders a plain loop's sum (``sum_mode`` 1,
    :attr:`hybridtree.device.runtime.DeviceInfo.sum_mode`)."""
    return {"BLOCK": BLOCK, "NR": nr, "WG": wg, **({"ORDERED_SUMS": 1} if sum_mode == 1 else {})}


@option_sets
def reduce_option_sets(info: DeviceInfo) -> list[tuple[str, dict]]:
    """cl/reduce.cl's builds a device asks for: at :func:`reduce_work_group`, for the default
    three mass fractions of :meth:`Reducer.lagrangian_radii` and for one (the probe's
    order check builds its own: :func:`hybridtree.device.probe.probe_option_sets`)."""
    return [("reduce.cl", reduce_defines(reduce_work_group(info), nr * TRIALS, info.sum_mode))
            for nr in (3, 1)]


class Reducer(SetReductions):
    """The fixed-order reductions on one runtime's device (see :func:`reducer`); ``fuse``
    False: the GPUs' unfused levels 1 and 2 on any device (tests); None: not on GPUs.
    ``rows_apart_from``: from this many particles on, an unfused sum's level-1 rows are
    made for the call and freed after it (they would sit beside a walk's peak: 2.6 bytes a
    particle for the radii); below it they are kept between calls (a buffer made and freed
    each call costs a GPU step time; the same bound as the walk's lists,
    :meth:`hybridtree.gravity.tuning.WalkTuning.lists_per_walk`).
    ``vel32``: the moments read float32 velocities (cl/reduce.cl VEL_T float; a state of
    memory.velocities = "float32"), widened exactly: the same sums as of their float64
    copies."""

    #: 2^28 particles: the tree's sorted keys of 2 GiB (WalkTuning.list_kept_bytes / 8)
    rows_apart_from: int = 1 << 28

    def __init__(self, rt: Runtime, fuse: bool | None = None, vel32: bool = False) -> None:
        if not rt.has_fp64:
            raise ValueError("deterministic reductions need double precision (cl_khr_fp64)")
        self.rt = rt
        self.vel32 = bool(vel32)
        self._twin: Reducer | None = None            # reducer(rt, vel32=True)'s
        self._radii_init: np.ndarray | None = None   # a non-blocking upload's source
        self.wg = reduce_work_group(rt.info)
        self._fuse = rt.info.kind != "gpu" if fuse is None else bool(fuse)
        self._fused: dict[tuple[str, int, int], bool] = {}
        # count_sum's work-group is fixed at build time (WG): it must fit what the built
        # kernel allows on this device too, not only the device's own limit
        limit = min(rt.max_work_group_size(self._knl(name))
                    for name in ("count_sum", "group_count_sum"))
        if limit < self.wg:
            self.wg = fit_work_group(limit)

    def _defines(self, nr: int = 3 * TRIALS) -> dict:
        return {**reduce_defines(self.wg, nr, self.rt.info.sum_mode),
                **({"VEL_T": "float"} if self.vel32 else {})}

    def _knl(self, name: str) -> cl.Kernel:
        return kernel(self.rt, "reduce.cl", name, self._defines())

    def _run(self, name: str, items: int, *args, nr: int = 3 * TRIALS) -> None:
        launch(self.rt, "reduce.cl", name, items, *args, defines=self._defines(nr),
               local=self.wg)

    def _levels(self, name: str, n: int, k: int, *args, op: str = "reduce_rows",
                nr: int = 3 * TRIALS) -> np.ndarray:
        """Run level-1 kernel ``name`` (n items, k sums; args after n, before out; built
        for ``nr`` radii), then level ``op`` until one row is left; that row (k,)."""
        return read_small(self.rt, np.empty(k), self._levels_on_device(name, n, k, *args, op=op,
                                                                        nr=nr))

    def _levels_on_device(self, name: str, n: int, k: int, *args, op: str = "reduce_rows",
                          nr: int = 3 * TRIALS, per_row: int = 1,
                          rows_out: cl.Buffer | None = None) -> cl.Buffer:
        """:meth:`_levels` enqueued only: the scratch buffer whose first k values will be
        the row (valid for the kernels enqueued right after).  ``per_row``: a level-1
        kernel's work-items per block (:mod:`.reduce_sets`: one per set); ``rows_out``:
        the caller's buffer for the level-1 rows (8 k ceil(n / BLOCK) bytes)."""
        names = ("reduce.even", "reduce.odd")
        rows = -(-n // BLOCK)
        if rows > 1 and self._fuses(name, k, nr):   # a work-group of BLOCK per level-2 row
            rows = -(-rows // BLOCK)
            out = scratch(self.rt, names[0], 8 * k * rows)
            launch(self.rt, "reduce.cl", name + "2", rows * BLOCK, np.int32(n), *args, out,
                   defines=self._defines(nr), local=BLOCK, fixed=True)
        else:
            # level-1 rows (8 K / BLOCK B/particle): from rows_apart_from on this call's
            # own, freed once level 2 is done (kept, they sat beside a walk's peak); the
            # next levels' stay kept
            out = (rows_out if rows > 1 and rows_out is not None
                   else self.rt.empty(8 * k * rows) if rows > 1 and n >= self.rows_apart_from
                   else scratch(self.rt, "reduce.rows" if rows > 1 else names[0],
                                8 * k * rows))
            # a level-1 kernel has a work-item per block; the level kernels one per value
            self._run(name, rows * (k if name in _LEVEL_OPS else per_row), np.int32(n), *args,
                      out, nr=nr)
        level = 1
        while rows > 1:
            nxt = scratch(self.rt, names[level % 2], 8 * k * -(-rows // BLOCK))
            self._run(op, k * -(-rows // BLOCK), np.int32(rows), np.int32(k), out, nxt)
            out, rows, level = nxt, -(-rows // BLOCK), level + 1
        return out

    def _fuses(self, name: str, k: int, nr: int) -> bool:
        """Whether level-1 kernel ``name`` of ``k`` sums has its levels-1-and-2 twin here
        (:data:`_FUSED`; work-groups of BLOCK allowed for the built kernel)."""
        key = (name, k, nr)
        if key not in self._fused:
            # not on GPUs: the fused kernel took a run's reductions 3.1 -> 3.9 ms a step at
            # 2^24 on the H200 (round 130); the level-1 rows there are made for each call
            self._fused[key] = (self._fuse and name in _FUSED
                                and 8 * k * BLOCK <= _FUSED_LOCAL and
                                self.rt.max_work_group_size(
                                    kernel(self.rt, "reduce.cl", name + "2",
                                           self._defines(nr))) >= BLOCK)
        return self._fused[key]

    def block_sum(self, n: int, k: int, terms: cl.Buffer) -> np.ndarray:
        """Column sums (k,) of the (n, k) float64 buffer ``terms``; :func:`host_block_sum`."""
        if n == 0:
            return np.zeros(k)
        return self._levels("reduce_rows", n, k, np.int32(k), terms)

    def net_acceleration(self, n: int, mass: cl.Buffer, acc: cl.Buffer,
                         mass_step: int = 1) -> np.ndarray:
        """Σ m a / Σ m (3,), acceleration units; zeros when Σ m = 0.  ``mass_step``: 1
        for a mass per particle, 0 for one mass for all (``mass[0]``; every method here
        that takes masses takes it: the same values read, the same bits)."""
        return net_of_sums(self.net_sums(n, mass, acc, mass_step))

    def net_sums(self, n: int, mass: cl.Buffer, acc: cl.Buffer,
                 mass_step: int = 1) -> np.ndarray:
        """(Σ m a_x, Σ m a_y, Σ m a_z, Σ m): the terms of the net acceleration, for a sum
        over processes."""
        if n == 0:
            return np.zeros(4)
        return self._levels("net_terms", n, 4, mass, np.int32(mass_step), acc)

    def remove_net(self, n: int, mass: cl.Buffer, acc: cl.Buffer, keep=None,
                   mass_step: int = 1) -> None:
        """acc -= Σ m a / Σ m in place, all on the device (nothing read back): the bits of
        ``subtract(n, acc, net_acceleration(n, mass, acc))``; ``keep``: DeviceState.remove_net."""
        if n > 0:
            sums = self._levels_on_device("net_terms4" if keep else "net_terms", n, 4, mass,
                                          np.int32(mass_step), acc)
            (self._run("subtract_net", n, np.int32(n), sums, acc) if keep is None
             else cl.enqueue_copy(self.rt.queue, keep, sums, byte_count=32))

    def subtract(self, n: int, acc: cl.Buffer, shift: np.ndarray) -> None:
        """acc -= shift in place (``shift`` (3,), e.g. the net acceleration)."""
        if n > 0:
            self._run("subtract3", n, np.int32(n), *(np.float64(s) for s in shift), acc)

    def moments(self, n: int, pos: cl.Buffer, vel: cl.Buffer, mass: cl.Buffer,
                pot: cl.Buffer | None = None, pot4: bool = False, mass_step: int = 1) -> dict:
        """Keys ``mass`` (Σ m), ``com`` (Σ m x / Σ m, (3,)), ``kinetic`` (½ Σ m v²),
        ``potential`` (½ Σ m φ, 0.0 without ``pot``; ``pot4``: φ the w of float4s),
        ``momentum`` (Σ m v, (3,)), ``angular_momentum`` (Σ m x × v about the origin,
        (3,)) and ``inertia`` (Σ m |x|², about the origin); internal units."""
        if n == 0:
            return moments_of_sums(np.zeros(13))
        return moments_of_sums(self._levels("moment_terms4" if pot4 else "moment_terms", n, 13, pos,
                                     vel, mass, np.int32(mass_step), pot,
                                     np.int32(pot is not None)))

    def lagrangian_radii(self, n: int, pos: cl.Buffer, mass: cl.Buffer, centre: np.ndarray,
                         fractions=(0.1, 0.5, 0.9), total_mass: float | None = None,
                         combine=None, mass_step: int = 1) -> list[float]:
        """Radii (length units) about ``centre`` enclosing the mass ``fractions`` (each
        > 0) of ``total_mass`` (default Σ m): for each, the radius of the particle
        where the cumulative mass in radius order first reaches f * total (the largest
        radius where it never does), found without sorting; NaN where total <= 0.

        ``combine(values, op)`` (op "sum" or "max"): the reduction over processes (e.g.
        :meth:`hybridtree.parallel.Comm.allreduce`) of every partial result, so that the
        radii are those of all processes' particles; collective then (every process calls
        it the same number of times, whatever its n)."""
        if combine is None:
            if n == 0:
                return [float("nan")] * len(fractions)
            return self._radii_here(n, pos, mass, centre, checked_fractions(fractions), total_mass,
                                    mass_step)
        c = [np.float64(x) for x in centre]
        if total_mass is None:
            assert mass_step == 1, "the total of one mass for all: give total_mass"
            total_mass = float(combine(self.block_sum(n, 1, mass), "sum")[0])
        rmax = self._levels("max_radius", n, 1, pos, *c, op="reduce_rows_max") \
            if n else np.zeros(1)
        rmax = float(combine(rmax, "max")[0])
        nr = len(fractions) * TRIALS
        radii = scratch(self.rt, "reduce.radii", 8 * nr)

        def enclosed(r: np.ndarray) -> np.ndarray:
            if n == 0:
                return combine(np.zeros(r.size), "sum").reshape(r.shape)
            cl.enqueue_copy(self.rt.queue, radii, np.ascontiguousarray(r, np.float64))
            return combine(self._levels("enclosed_terms", n, nr, pos, *c, mass,
                                        np.int32(mass_step), radii, nr=nr),
                           "sum").reshape(r.shape)

        return multisect(fractions, total_mass, rmax, enclosed, TRIALS)

    def _radii_here(self, n: int, pos: cl.Buffer, mass: cl.Buffer, centre: np.ndarray,
                    fractions, total_mass: float | None, mass_step: int = 1) -> list[float]:
        """:meth:`lagrangian_radii` of one process's particles, the multisection run on
        the device (cl/reduce.cl ``radii_start``, ``radii_narrow``: :func:`multisect`'s
        steps, the same answer) and read back once."""
        rt, nf, c = self.rt, len(fractions), [np.float64(x) for x in centre]
        nr = nf * TRIALS
        st = scratch(rt, "reduce.radii_state", 8 * (2 + 4 * nf))
        self._radii_init = np.zeros(2 + nf)         # kept until the copy has run
        self._radii_init[0] = 0.0 if total_mass is None else total_mass
        self._radii_init[2:] = fractions
        # its event kept too: pyopencl's event of a copy from host memory, dropped, waits
        self._radii_copy = cl.enqueue_copy(rt.queue, st, self._radii_init, is_blocking=False)
        if total_mass is None:
            assert mass_step == 1, "the total of one mass for all: give total_mass"
            total = self._levels_on_device("reduce_rows", n, 1, np.int32(1), mass)
            cl.enqueue_copy(rt.queue, st, total, byte_count=8)
        rmax = self._levels_on_device("max_radius", n, 1, pos, *c, op="reduce_rows_max")
        cl.enqueue_copy(rt.queue, st, rmax, byte_count=8, dst_offset=8)
        radii = scratch(rt, "reduce.radii", 8 * nr)
        self._run("radii_start", nf, np.int32(nf), np.int32(TRIALS), st, radii)
        for _ in range(PASSES):    # the radii computed again in each pass: no 8 B/particle
            sums = self._levels_on_device("enclosed_terms", n, nr, pos, *c, mass,
                                          np.int32(mass_step), radii, nr=nr)
            self._run("radii_narrow", nf, np.int32(nf), np.int32(TRIALS), sums, st, radii)
        return [float(h) for h in read_radii(rt, st, nf)]

    def type_mass(self, n: int, types: cl.Buffer, t: int, mass: cl.Buffer,
                  mass_step: int = 1) -> cl.Buffer:
        """The masses (float64) of the particles whose GADGET type (uint8 ``types``) is
        ``t``, 0 for the others: a scratch buffer, valid until the next call."""
        out = scratch(self.rt, "reduce.type_mass", 8 * max(n, 1))
        if n:
            self._run("type_mass", n, np.int32(n), types, np.uint64(t), mass,
                      np.int32(mass_step), out)
        return out

    def all_finite(self, n: int, *arrays: tuple[cl.Buffer, int]) -> bool:
        """Whether every value of each (buffer, count of float64) is finite.  ``n``
        (particles) only keeps the signature of the other reductions."""
        flag = scratch(self.rt, "reduce.flag", 4)
        cl.enqueue_fill_buffer(self.rt.queue, flag, np.int32(0), 0, 4)   # no wait
        for buf, count in arrays:
            self._run("nonfinite", count, np.int64(count), buf, flag)
        return bool(read_small(self.rt, np.empty(1, np.int32), flag)[0] == 0)

    def count_sum(self, n: int, counts: cl.Buffer | GroupCounts) -> tuple[int, int]:
        """Sums of both components of n int2 interaction counts, as 64-bit integers;
        ``counts`` kept per group (:class:`GroupCounts`): the same sums of its sinks."""
        if n <= 0 or getattr(counts, "n_groups", 1) == 0:
            return 0, 0
        groups, part = self._count_parts(n, counts)
        out = read_small(self.rt, np.empty((groups, 2), np.int64), part)
        return int(out[:, 0].sum()), int(out[:, 1].sum())

    def count_sum_into(self, n: int, counts: cl.Buffer | GroupCounts, total: cl.Buffer) -> None:
        """Enqueue total[0], total[1] (int64 on the device) += :meth:`count_sum`'s sums;
        nothing is read back."""
        if n > 0 and getattr(counts, "n_groups", 1) != 0:
            groups, part = self._count_parts(n, counts)
            launch(self.rt, "reduce.cl", "count_add", 1, np.int32(groups), part, total,
                   defines=self._defines(), local=1)

    def _count_parts(self, n: int, counts: cl.Buffer | GroupCounts) -> tuple[int, cl.Buffer]:
        """Enqueue count_sum (group_count_sum for :class:`GroupCounts`): (its number of
        work-groups, their (groups, 2) int64 sums)."""
        c = counts
        items = c.n_groups if isinstance(c, GroupCounts) else n
        groups = max(1, min(-(-items // self.wg), 4 * self.rt.info.compute_units))
        part = scratch(self.rt, "reduce.counts", 16 * groups)
        name, args = (("group_count_sum", (np.int32(items), c.ranges, c.info, c.caller,
                                           np.uint32(c.keep), np.int32(c.own)))
                      if isinstance(c, GroupCounts) else ("count_sum", (np.int32(n), c)))
        launch(self.rt, "reduce.cl", name, groups * self.wg, *args, part,
               defines=self._defines(), local=self.wg, fixed=True)
        return groups, part


def reducer(rt: Runtime, vel32: bool = False) -> Reducer:
    """The runtime's :class:`Reducer` (one per runtime: :attr:`Runtime.reductions`);
    ``vel32``: its twin whose moments read float32 velocities (made when first asked)."""
    red = rt.reductions
    if red is None:
        red = rt.reductions = Reducer(rt)
    if vel32:
        if red._twin is None:
            red._twin = Reducer(rt, vel32=True)
        return red._twin
    return red
