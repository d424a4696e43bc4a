"""A run's memory plan, made before anything is allocated: from N, the settings and the
device (:class:`hybridtree.device.runtime.DeviceInfo`), the peak bytes of the device's
buffers per owner (the owners of the ledger, :mod:`hybridtree.device.memory`), the
driver's own memory (``context``, an estimate) and the largest single buffer
(:func:`device_plan`); the largest N a device takes (:func:`largest_n`).

Every figure is in :data:`BYTES`, with where it comes from: the buffers as the code
allocates them (the allocation sites named), checked against the ledger's peaks of runs
on the CPU device (tests/run/test_plan.py: within 5 % per owner at 2^15; PoCL and Intel's
CPU runtime, 2026-11-29) and, for what a CPU device does not do (the interaction lists,
the staging ring, the context), against the H200 (docs/benchmarks.md §7).  A code change
that changes a buffer changes its line here, and the test says so.  Units: bytes.

This module is in ``run/`` rather than ``device/``: it settles the settings as a run does
(:meth:`hybridtree.gravity.settings.GravitySettings.settled`) and reads the gravity
layer's own constants (the list budget, the mesh's buffers)."""

from __future__ import annotations

import os
from collections.abc import Mapping
from dataclasses import dataclass, field, replace
from types import MappingProxyType

from ..config.settings import Settings
from ..device.runtime import DeviceInfo
from ..device.transfer import CHUNK, STAGING_SLOTS
from ..gravity.engine import float4_part
from ..gravity.periodic import default_mesh
from ..gravity.pm_compact import compact_mesh_bytes
from ..gravity.pm_device import mesh_bytes, mesh_words
from ..gravity.settings import GravitySettings
from ..gravity.tuning import LIST_WALK, TUNING, WalkTuning
from ..gravity.walk_kernels import default_group
from .options import box_of

__all__ = ["BYTES", "CONTEXT", "Plan", "apart_bytes", "device_plan", "largest_n"]

MIB = 1 << 20

#: ics kinds whose particles all have one mass (1 / n): a device state of one process and
#: no box keeps it once (integrate/stepper.py SerialStepper, state/mass.py)
UNIFORM_KINDS = ("plummer", "hernquist", "cold_sphere")

#: Bytes of each buffer family: (figure, source).  Per particle unless the name says
#: otherwise (``_cell``: per tree cell; ``_group``: per leaf of a sink-group split).
BYTES: Mapping[str, tuple[float, str]] = MappingProxyType({
    "state": (53, "state/device.py DeviceState: float64 pos, vel (24 B each); "
                  "uint32 ids (uint64 where an ID is 2^32 or more: 4 B more), uint8 types"),
    "state_vel32": (12, "state/device.py DeviceState vel32: float32 velocities (memory."
                        "velocities = \"float32\") take 12 B of the state's 24 B of "
                        "velocities: these bytes less"),
    "state_mass": (8, "state/device.py: float64 mass per particle, where masses differ or "
                      "are not known before reading (a file); one 8-byte mass for all "
                      "where a generated sphere's are equal (one process, no box)"),
    "state_pot": (8, "state/device.py: the float64 potential of float64 parts"),
    "state_part": (24, "state/device.py: acc of each force part (float64 x 3); a box's "
                       "two parts add their sum (total_acc: the block steps' bins, a_old); "
                       "a snapshot adds the parts on the host"),
    "state_part4": (16, "state/device.py: each force part as the walk wrote it, float4 "
                        "(ax, ay, az, pot; the net force apart), where a walk alone writes "
                        "every part (gravity/engine.py float4_part: one process, no box, "
                        "shared steps); no float64 pot"),
    "state_eps": (4, "gravity/eps_types.py: float32 eps per particle (gravity.eps_types)"),
    "state_bins": (4, "integrate/timebins.py: int32 bin per particle (block steps)"),
    "tree": (36, "gravity/tree: src_hi, src_lo 32 (the sort's spare halves and the first "
                 "split's counts live inside them until split_gather fills them) and "
                 "order 4 (device_build.py; docs/running.md)"),
    "tree_keys": (8, "device_build.py: the sorted keys; from WalkTuning.lists_per_walk on (2^28 "
                     "particles) a buffer of the build's own, let go once the sink groups "
                     "are made (device_tree.py drop_keys): alive in the build, not in the "
                     "walk; below it the workspace's, kept (no buffer made each step)"),
    "tree_inverse": (4, "device_tree.py inverse_order, a buffer of its own made when first "
                        "asked for, until the next build: walk.py's sort_back64 asks for it "
                        "each walk (0 where the walk scatters by order instead)"),
    "tree_cell": (52, "device_build.py: cell_level 4, cell_link, cell_hi, "
                      "cell_lo (16 B each)"),
    "tree_cell_let": (16, "device_build.py DeviceTree.info (the LET's rows, several processes)"),
    "tree_cell_quad": (32, "device_build.py cell_quad (quadrupole moments)"),
    "tree_cell_eps": (16, "device_build.py cell_eps (a softening per type)"),
    "tree_cell_ext": (24, "tree/refit.py cell_ext, the cells' boxes (block steps' refits)"),
    #: cells per particle at n_leaf 16 (scaled by 16 / n_leaf): Plummer, CPU ledger at
    #: 2^15-2^18: 0.23-0.255 cells per particle
    "cells_per_particle": (0.26, "measured: Plummer, n_leaf 16, 2^15-2^18 (CPU ledger)"),
    #: a build lets the workspace's last tree go before it grows the cell buffers
    #: (DeviceTree.let_go): one generation of cells at a time
    "cell_generations": (1, "device_build.py: the last tree let go first"),
    "tree_group": (100, "device_build.py device_groups: g_leaves 8, g_pack 4, g_box 32, "
                        "g_ranges 8, g_hi, g_lo, g_half 48, per leaf of the split"),
    #: particles per leaf of a split into at most n_group: 0.35 n_group (CPU, 2^15-2^18);
    #: the H200's list buffers imply 0.36 at 2^20 and 0.46 at 2^22
    "group_fill": (0.35, "measured: CPU ledger; H200 lists (docs/benchmarks.md §7)"),
    "sort": (0.64, "gravity/tree/device_sort.py: the histograms (0.62-0.8 measured, CPU "
                  "ledger 2^16-2^18); keys and values in the tree's buffers (SortBuffers)"),
    "sort_mesh": (24, "device_sort.py: the mesh's sort of particles by cell (keys, values)"),
    "walk": (16, "gravity/walk.py: walk_out 16 (float4 per sink, tree order), none where the "
                 "walk writes a state's float32 part at the caller's index (WalkTuning "
                 "direct_out, cl/walkcommon.cl OUT_AT); no sink indices (SELF)"),
    "walk_group": (6.8, "gravity/walk.py walk_gcounts: the tree walks' (entries, cells), 8 B "
                        "per sink group (the list walk's are its walk_info); per group of the "
                        "plan's count 6.8 (CPU ledger, 2^15: the walk's groups are fewer)"),
    "walk_hybrid": (0, "none: the hard part writes no potential (cl/prepare.cl PUT_POT 0)"),
    "walk_info_group": (8, "gravity/list_walk.py walk_info per sink group (the walk's "
                           "counts too: device/reduce.py GroupCounts)"),
    #: entries per group list: the room grows to the longest list (H200, 2^22-2^27)
    "list_room": (32768, "measured: H200, docs/benchmarks.md §7"),
    "reductions": (0.22, "device/reduce.py: levels 1 and 2 summed in one kernel (K sums: "
                         "8 K / 4096), the radii computed in each pass (no buffer); the "
                         "level-1 rows of a sum not fused (the radius, the total mass: "
                         "8 / 64) kept below Reducer.rows_apart_from (with the scratch's "
                         "growth headroom); measured 0.217 (CPU ledger, a 32^3 box)"),
    "reductions_gpu": (2.6, "device/reduce.py: on GPUs levels 1 and 2 are not fused (speed): "
                            "the level-1 rows (8 x 21 / 64 = 2.6 for the radii); from "
                            "Reducer.rows_apart_from on (2^28) made for each reduction "
                            "and freed after it (kept, the H200 held 4.8 B/p beside the "
                            "walk, round 135), below it kept; the GPUs' path on the CPU "
                            "ledger at 2^16: 2.68 B/p at the owner's peak"),
    "mesh": (72, "gravity/pm_device.py: pm_keys 8, pm_part 32, pm_tmp 32 (interlaced)"),
    "mesh32": (0, "gravity/pm_compact.py: nothing per particle (a deposit by integer "
                  "atomics, forces added at each particle's own index); its two float32 "
                  "meshes: compact_mesh_bytes"),
    "direct": (80, "gravity/direct.py: sinks' hi, lo, out and sources' hi, lo (float4)"),
    "let": (64, "parallel/engine.py: let_pos 24, let_mass 8, x_acc 24, x_pot 8 per local "
                "particle (an estimate: the LET's own size is not planned)"),
})

#: The driver's own memory per device (bytes; no ledger sees it): the OpenCL context and
#: the kernels' programs.  NVIDIA: the H200's nvidia-smi less the ledger's peak, 528 MiB
#: at 2^22 and 2^24 (docs/benchmarks.md §7); other GPUs: NVIDIA's figure (not measured).
#: CPU devices: the process's resident memory after a 4096-particle run (kernels in the
#: build cache) less the interpreter with the package imported (47 MiB) and the run's
#: buffers, measured on the 2-core development machine (2026-11-29): Intel's CPU runtime
#: 242 MiB, PoCL 3.0 (PyPI) 250 MiB (a first run that compiles its kernels peaked at 420:
#: LLVM's own memory while it builds).  Most of a CPU driver's figure is the pages of its
#: shared libraries, which the kernel counts by how its page cache holds those files (a
#: freshly installed environment: 75 MiB more, the same anonymous memory): the run's
#: resident prediction measures it instead (:func:`hybridtree.run.size.resident_need`).
CONTEXT: Mapping[str, int] = MappingProxyType({"nvidia": 528 * MIB, "gpu": 530 * MIB,
                                             "intel-cpu": 242 * MIB, "cpu": 250 * MIB})


def context_bytes(info: DeviceInfo) -> int:
    """The estimate of the driver's own memory on ``info`` (:data:`CONTEXT`; none on a
    simulator, whose memory is the host's and not measured)."""
    if info.simulator:
        return 0
    if info.kind == "gpu":
        return CONTEXT["nvidia"] if info.vendor == "nvidia" else CONTEXT["gpu"]
    return CONTEXT["intel-cpu"] if info.vendor == "intel" else CONTEXT["cpu"]


@dataclass(frozen=True)
class Plan:
    """A run's peak device memory (bytes): ``owners`` as the ledger names them,
    ``unseen`` what no ledger sees (reikna's FFT arrays of a mesh), ``context`` the
    driver's (an estimate), ``largest`` the largest single buffer."""

    n: int
    device: DeviceInfo
    owners: dict[str, int]
    context: int
    largest: int
    unseen: dict[str, int] = field(default_factory=dict)
    mesh_side: int = 0          # a periodic box's mesh points per side (0: none)
    #: bytes the owners' peaks count twice that are never alive together (the build's
    #: sorted keys, a large walk's lists, the reductions' rows: :func:`apart_bytes`)
    apart: int = 0
    #: bytes float32 velocities would save where the run keeps float64 ones and could
    #: take float32 (memory.velocities; 0: it keeps float32 ones, or cannot): the refusal
    #: says what the run would need with them
    vel32_saves: int = 0
    #: the mesh in float32 (memory.mesh): :func:`compact_mesh_bytes`, not :func:`mesh_bytes`
    mesh_single: bool = False
    #: (the settings that would shrink the run, what it would need with them) where a
    #: periodic box keeps the float64 mesh and could take the float32 one (memory.mesh,
    #: with memory.velocities where that saves too); None elsewhere
    lean: tuple[str, int] | None = None

    @property
    def buffers(self) -> int:
        """The ledger's peak as planned: the owners' peaks less what is never alive
        together (:attr:`apart`)."""
        return sum(self.owners.values()) - self.apart

    @property
    def total(self) -> int:
        """Everything the run takes on the device."""
        return self.buffers + sum(self.unseen.values()) + self.context

    def mesh_refusal(self) -> str:
        """Why the device cannot hold the periodic mesh alone ("" where it can), worded
        as the mesh's own check words it (:func:`hybridtree.gravity.pm_device.refuse_unless_fits`)."""
        d = self.device
        if not self.mesh_side:
            return ""
        big, total = (compact_mesh_bytes if self.mesh_single else mesh_bytes)(self.mesh_side)
        limit, memory = d.max_mem_alloc_size or big, d.global_mem_size or total
        if big <= limit and total <= memory:
            return ""
        return mesh_words(f"a {self.mesh_side}^3 PM mesh needs",
                          "float32" if self.mesh_single else "complex128", big, total,
                          d.name, limit, memory, "take a smaller pm_grid")

    def refusal(self) -> str:
        """Why the device cannot hold the run ("" where it can): the mesh's own words
        where the mesh alone does not fit (:meth:`mesh_refusal`)."""
        d = self.device
        mesh = self.mesh_refusal()
        if mesh:
            return mesh
        if d.global_mem_size and self.total > d.global_mem_size:
            vel32 = self.total - self.vel32_saves
            hint = (f" (memory.velocities = \"float32\" would need about {_size(vel32)})"
                    if self.vel32_saves and vel32 <= d.global_mem_size else "")
            if self.lean is not None and self.lean[1] <= d.global_mem_size:
                hint = f" ({self.lean[0]} would need about {_size(self.lean[1])})"
            return (f"need about {_size(self.total)} of device memory "
                    f"({self.describe()}), but {d.label} has {_size(d.global_mem_size)}"
                    f"{hint}")
        if d.max_mem_alloc_size and self.largest > d.max_mem_alloc_size:
            return (f"need a buffer of {_size(self.largest)}, but {d.label} allocates at "
                    f"most {_size(d.max_mem_alloc_size)} at once")
        return ""

    def describe(self) -> str:
        """``owner MiB`` for each owner, largest first, the estimates marked."""
        rows = [(k, v, "") for k, v in self.owners.items()]
        rows += [(k, v, " (estimate)") for k, v in {**self.unseen,
                                                    "context": self.context}.items()]
        rows.sort(key=lambda r: -r[1])
        return ", ".join(f"{k} {v / MIB:.0f} MiB{e}" for k, v, e in rows if v)


def _size(nbytes: float) -> str:
    for unit, scale in (("TiB", 2 ** 40), ("GiB", 2 ** 30), ("MiB", 2 ** 20)):
        if nbytes >= scale or unit == "MiB":
            return f"{nbytes / scale:.3g} {unit}"
    return ""


def _b(name: str) -> float:
    return BYTES[name][0]


def apart_bytes(keys: float, lists: float, rows: float, inverse: float) -> float:
    """Of what the owners' peaks count, the bytes never alive at once: the build holds the
    sorted keys (``keys``), the walk its lists where they are made for it and let go
    after it (``lists``; 0 where kept between walks), a reduction its level rows
    (``rows``), and the walk and the reductions the inverse order (``inverse``, no
    owner's peak of its own: the tree's is the build's, keys > inverse).  The run's peak
    holds the largest of the three stages' own, not their sum."""
    return keys + lists + rows - max(keys, lists + inverse, rows + inverse)


def device_plan(settings: Settings, info: DeviceInfo, n: int, size: int = 1,
                tuning: WalkTuning = TUNING, stored: bool = False) -> Plan:
    """The plan of a run of ``settings`` with ``n`` particles on this process (its
    share under MPI, of ``size`` processes) on device ``info``: the peak bytes of the
    buffers each owner holds at once, an upper bound where a figure varies.  ``tuning``:
    the walk's (its list walk, the lists' budget and the size kept between walks).
    ``stored``: a restart that may continue with its snapshot's stored forces, which a
    state keeps as float64 parts (integrate/stepper.py SerialStepper: not the walk's
    float4, 16 bytes a particle more)."""
    g = GravitySettings.from_settings(settings.gravity, settings.hybrid)
    box = box_of(settings)
    forced = os.environ.get("HYBRIDTREE_STATE", "")
    on_device = info.fp64 and g.method == "tree" and g.build == "device" and forced != "host"
    g = g.settled(info.kind, relative_ok=size == 1 or on_device,
                  cosmological=settings.cosmology.enabled)
    if box is not None and settings.gravity.multipole == "auto":
        g = replace(g, multipole="monopole")        # as settled with its Periodic
    block = settings.time.stepping == "block"
    vel32 = settings.memory.velocities == "float32"
    # the float32 mesh: one process (many share the float64 mesh in slabs)
    mesh32 = box is not None and settings.memory.mesh == "float32" and size == 1
    shared = not block and (box is None or settings.cosmology.short_steps == 1)
    # float32 velocities would save the device state's bytes (a host state: none there)
    vel32_ok = on_device and g.method == "tree"
    n = int(n)
    owners: dict[str, float] = {}
    unseen: dict[str, float] = {}
    apart = 0.0
    largest = 24 * n
    n_mesh = settings.gravity.pm_grid or default_mesh(n * size)
    if g.method == "direct":
        owners["direct"] = _b("direct") * n
    else:
        parts = 2 if (g.changeover is not None or (box is not None and (
            block or settings.cosmology.short_steps > 1))) else 1
        # a restart's stored force is kept as float64 parts, but for a box's float32
        # mesh, which computes it again (integrate/stepper.py SerialStepper)
        four = (size == 1 and not (stored and parts == 1 and not mesh32)
                and (box is None or mesh32)
                and float4_part(g, shared) is not None)
        # one mass for all (DeviceState uniform): a generated sphere on one process, no
        # box; a generated box with the float32 mesh
        one_mass = size == 1 and (box is None and settings.ics.kind in UNIFORM_KINDS
                                  or mesh32 and settings.ics.kind == "cosmo_box")
        mass = _b("state_mass") * (not one_mass)
        vel = _b("state") - _b("state_vel32") * vel32
        if on_device and four:
            owners["state"] = n * (vel + mass + _b("state_part4") * parts
                                   + _b("state_eps") * (g.eps_ratio is not None))
        elif on_device:
            summed = parts > 1 and box is not None      # DeviceState.total_acc's buffer
            owners["state"] = n * (vel + mass + _b("state_pot")
                                   + _b("state_part") * (parts + summed)
                                   + _b("state_eps") * (g.eps_ratio is not None)
                                   + _b("state_bins") * block)
        per_cell = (_b("tree_cell") + _b("tree_cell_quad") * (g.multipole == "quadrupole")
                    + _b("tree_cell_eps") * (g.eps_ratio is not None)
                    + _b("tree_cell_ext") * block + _b("tree_cell_let") * (size > 1))
        cells = _b("cells_per_particle") * 16 / g.n_leaf * n
        n_group = g.n_group or default_group(info.kind, n, g.opening == "relative")
        groups = n / (_b("group_fill") * n_group) + 1
        owners["tree"] = ((_b("tree") + _b("tree_keys")) * n
                          + _b("cell_generations") * per_cell * cells + _b("tree_group") * groups)
        largest = max(largest, int(32 * cells))
        owners["sort"] = n * (_b("sort") + _b("sort_mesh") * (box is not None and not mesh32))
        direct = four and on_device and tuning.direct_out        # no walk_out
        owners["walk"] = n * (_b("walk") * (not direct)
                              + _b("walk_hybrid") * (g.changeover is not None))
        if dict(tuning.device(info.kind).walk).get("KERNEL") != LIST_WALK:
            owners["walk"] += _b("walk_group") * groups
        else:
            most = tuning.list_batch_bytes
            budget = min(info.max_mem_alloc_size or most,
                         (info.global_mem_size or 0) // tuning.list_memory_share or most, most)
            owners["lists"] = min(budget, 4 * _b("list_room") * groups)
            owners["walk"] += _b("walk_info_group") * groups
        rows = _b("reductions_gpu") * (info.kind == "gpu") * n
        owners["reductions"] = _b("reductions") * n + rows
        if tuning.lists_per_walk(n):    # keys, lists, rows take turns (WalkTuning)
            apart = apart_bytes(_b("tree_keys") * n, owners.get("lists", 0), rows,
                                _b("tree_inverse") * n)
        elif not direct:                # all kept: the walk's inverse order beside the keys
            owners["tree"] += _b("tree_inverse") * n
        if mesh32:
            big, all_mesh = compact_mesh_bytes(n_mesh)
            owners["mesh"] = _b("mesh32") * n + all_mesh
            largest = max(largest, big)
        elif box is not None:
            big, all_mesh = mesh_bytes(n_mesh)
            starts = 4 * (n_mesh ** 3 + 1)
            owners["mesh"] = _b("mesh") * n + starts
            unseen["mesh FFT"] = all_mesh - starts        # reikna's arrays: no ledger
            largest = max(largest, big)
        if size > 1:
            owners["let"] = _b("let") * n
    staging = os.environ.get("HYBRIDTREE_STAGING", "auto")
    if n and (staging == "always" or (staging == "auto" and info.kind == "gpu")):
        owners["staging"] = STAGING_SLOTS * CHUNK
    plan = Plan(n, info, {k: int(v) for k, v in owners.items()}, context_bytes(info),
                int(largest), {k: int(v) for k, v in unseen.items()},
                n_mesh if box is not None and g.method != "direct" else 0, int(apart),
                int(_b("state_vel32") * n) if vel32_ok and not vel32 else 0, mesh32)
    # what the float32 mesh would need, for the refusal's hint: planned only where the
    # device cannot hold this plan (largest_n and the device choice ask many plans)
    if (box is not None and not mesh32 and size == 1 and on_device
            and n_mesh & (n_mesh - 1) == 0
            and info.global_mem_size and plan.total > info.global_mem_size):
        flat = {"memory.mesh": "float32"}
        if vel32_ok and not vel32:
            flat["memory.velocities"] = "float32"
        named = " and ".join(f'{k} = "{v}"' for k, v in flat.items())
        plan = replace(plan, lean=(named, device_plan(settings.with_overrides(flat), info,
                                                      n, size, tuning, stored).total))
    return plan


def largest_n(settings: Settings, info: DeviceInfo, size: int = 1) -> int:
    """The largest particle count whose :func:`device_plan` ``info`` holds (0: none)."""
    def fits(n: int) -> bool:
        return not device_plan(settings, info, n, size).refusal()

    if not fits(1):
        return 0
    lo, hi = 1, 2
    while fits(hi) and hi < 1 << 40:
        lo, hi = hi, 2 * hi
    while hi - lo > max(1, lo // 1000):      # three significant digits suffice
        mid = (lo + hi) // 2
        lo, hi = (mid, hi) if fits(mid) else (lo, mid)
    return lo


#: The default settings the largest N is told for (``hybridtree devices``, docs/gpus.md):
#: a Plummer sphere, and a periodic ΛCDM box (TreePM)
DEFAULT_RUNS: Mapping[str, Mapping] = MappingProxyType({
    "plummer": MappingProxyType({"ics.kind": "plummer"}),
    "box": MappingProxyType({"ics.kind": "cosmo_box", "cosmology.enabled": True})})


def default_largest(info: DeviceInfo) -> tuple[int, int]:
    """(largest N of a Plummer run, of a periodic box) with the default settings on
    ``info`` (one process)."""
    from ..config.settings import settings_from_flat
    return tuple(largest_n(settings_from_flat(dict(flat)), info)        # type: ignore[return-value]
                 for flat in DEFAULT_RUNS.values())
