"""What a run needs and whether the machine has it: host and device memory checked
before any particle is drawn, read or copied (:func:`check_memory`, :func:`check_ic_memory`),
the per-particle figures they use (the ``HOST_BYTES_*`` constants), the particle count of
the initial conditions known beforehand (:func:`ics_count`) and the memory available now
(:func:`host_memory_available`).  Mistakes are :class:`hybridtree.run.processes.RunError`, raised
on every process together under MPI."""

from __future__ import annotations

import math
from collections.abc import Callable
import os
from pathlib import Path
from types import MappingProxyType

from ..config.settings import Settings, ics_file_error
from ..ics.threads import draw_threads
from ..io.hdf5_columns import ROWS as SNAPSHOT_ROWS
from ..io.snapshot import SnapshotError, count_particles
from ..device.choice import choose_device, get_runtime, set_device_slot
from ..device.runtime import DeviceError, DeviceInfo
from ..parallel.comm import Comm, node_local_rank
from .plan import device_plan
from .processes import RunError, together

__all__ = ["HOST_BYTES_DEVICE_STATE", "HOST_BYTES_DRAWN", "HOST_BYTES_SNAPSHOT_ROW",
           "HOST_DRAW_BYTES", "HOST_BYTES_HOST_STATE", "HOST_BYTES_RESTART",
           "HOST_BYTES_GATHER", "HOST_BYTES_PER_GRID_POINT", "HOST_BYTES_PER_BOX_POINT",
           "HOST_FIXED_BYTES",
           "HOST_BYTES_IC_COMMAND", "HOST_BYTES_RESIDENT", "HOST_PYTHON_BYTES",
           "MPI_SLACK", "check_ic_memory", "check_memory",
           "device_need", "host_memory_available", "resident_need", "resident_now", "ics_count",
           "per_particle_host", "status_bytes",
           "per_process"]


# --- memory: checked before any particle is drawn, read or copied ------------------------
#
# Host bytes a run takes, per particle of this process unless said otherwise: what the
# code allocates, checked against the peak of its numpy arrays (tracemalloc: the growth of
# the peak from 2^17 to 2^18 particles, one process, PoCL; tests/run/test_sizes_and_foreign_files.py
# checks the first figure).

#: a run with its state on the device: the particles as drawn, read or copied (float64
#: pos, vel (n, 3) and mass, uint64 ids: 64 B) while the first snapshot is downloaded
#: (float64 pos, vel, acc (n, 3), mass, pot, uint64 ids: 96 B); measured 168 B (a
#: generated model, a file's particles and a hybrid run alike)
HOST_BYTES_DEVICE_STATE = 176
#: a run of one process with its state on the device whose initial conditions are a
#: generated sphere (ics.kind plummer, hernquist, cold_sphere), drawn block by block into
#: the state's rows (:mod:`hybridtree.ics.rows`): no array of the model is on the host.
#: Besides a snapshot's host copy (:data:`HOST_BYTES_SNAPSHOT_ROW`) and the drawing's
#: blocks (:data:`HOST_DRAW_BYTES`) nothing grows with N: tracemalloc's peak of a one-step
#: run with snapshots written in chunks of 2^15 rows was 63.52 MB at 2^19 particles and
#: 63.63 MB at 2^20 (0.2 B a particle; the whole-model path: 84.2 and 137.1 MB, 101 B);
#: the resident memory of setting up the state on the CPU device grew by 92 B a particle
#: from 2^21 to 2^22, the state's own 93 (the whole model: 171).  8 B is a margin for
#: what grows unseen there (and refuses an absurd N at once)
HOST_BYTES_DRAWN = 8
#: such a run's snapshot on the host (float64 pos, vel, acc, mass, pot, uint64 ids,
#: uint8 types: 97 B, and the writer's copies), per particle up to the writer's chunk of
#: :data:`hybridtree.io.hdf5_columns.ROWS` (4 Mi) particles, above which a snapshot is
#: downloaded and written a chunk at a time
HOST_BYTES_SNAPSHOT_ROW = 104
#: such a run's drawing: per drawing thread two blocks of 2^16 particles waiting and one
#: being drawn (about 7 MB of arrays each); and the chunk of 2^18 rows gathered, moved to
#: the centre of mass and sent (about 220 B a row)
HOST_DRAW_BYTES = (24 << 20, 64 << 20)
#: a run with its state on the host (no double precision, gravity.build = "host", the
#: direct method): the state itself, the numpy tree and the walk's arrays as well;
#: measured 379 B (a hybrid run holds one more acceleration: 24 B)
HOST_BYTES_HOST_STATE = 416
#: reading a run snapshot to continue it: every column with its acceleration and
#: potential, the columns joined, the IDs sorted to check them; measured 208 B
HOST_BYTES_RESTART = 216
#: process 0 of an MPI run with output.snapshot_files = "single", per particle of the
#: whole run: the gathered rows (96 B), their copy in ID order (96 B) and the sort order
HOST_BYTES_GATHER = 200
#: ics.kind = "cosmo_sphere": every process computes the whole grid's fields (white noise,
#: its Fourier modes, the displacements), per grid point; measured 52 B (1LPT), 68 B (2LPT)
HOST_BYTES_PER_GRID_POINT = 72
#: ics.kind = "cosmo_box" (ics/lpt_fields.py: the fields kept half-transformed, made real
#: a plane at a time), per grid point at the peak: 2LPT in float64 fields 52 (50 measured
#: at 256^3 on the 2-core machine, 51 at 1024^3 on the H200's host, round 150), 1LPT or
#: memory.ics_fields = "float32" 28 (25-26 measured at 256^3)
HOST_BYTES_PER_BOX_POINT = MappingProxyType({"2lpt": 52, "lean": 28})
#: a fixed part: a generator's blocks of 2^16 particles, the code's own buffers
HOST_FIXED_BYTES = 64 << 20
#: ``hybridtree ic``: the whole model (float64 pos, vel, mass, uint64 ids) while it is
#: written; measured peak 76 B
HOST_BYTES_IC_COMMAND = 80
#: the process's resident host memory at a run's peak besides the device's buffers, per
#: particle: the snapshot's columns downloaded while the device holds its peak (float64
#: pos, vel, acc, mass, pot; uint64 ids and types); resident memory measured 90-106 B
#: (2^16-2^18, Intel's CPU runtime): what :func:`resident_need` adds
HOST_BYTES_RESIDENT = 104
#: the interpreter with numpy, h5py, pyopencl and the package imported: 47 MiB resident
#: (the 2-core development machine, 2026-11-29)
HOST_PYTHON_BYTES = 47 << 20
#: MPI: a process may hold more than N/K particles once the domains are cut by measured
#: work; its buffers grow by a quarter when they must (DeviceState.reserve)
MPI_SLACK = 1.25


def resident_need(settings: Settings, info, n: int, ready: int | None = None) -> int:
    """The resident memory (bytes) of a one-process run of ``n`` particles on a CPU device
    ``info`` at its peak, as the plan predicts it: the process with its runtime ready, the
    device's plan less the context (host memory on a CPU device) and the host's arrays at
    that moment.

    ``ready``: the process's resident memory measured with the runtime made and its kernels
    built, before the run's buffers (:func:`resident_now`), in place of the assumed
    interpreter (:data:`HOST_PYTHON_BYTES`) and driver's context
    (:func:`hybridtree.run.plan.context_bytes`).  On a CPU device most of that context is
    the pages of the driver's shared libraries, which the kernel counts by how its page
    cache holds those files, not by what the run does: in a freshly installed environment
    the same run held 68 MiB more of them (the same anonymous memory to 0.4 MiB)."""
    plan = device_plan(settings, info, n)
    base = HOST_PYTHON_BYTES + plan.context if ready is None else int(ready)
    return base + plan.total - plan.context + int(n) * HOST_BYTES_RESIDENT


def status_bytes(key: str) -> int | None:
    """A memory figure of this process (bytes) from ``/proc/self/status`` (``VmRSS``,
    ``VmHWM``, ``RssFile``: kB there), or None where the system does not tell it."""
    try:
        with open("/proc/self/status") as f:
            for line in f:
                if line.startswith(f"{key}:"):
                    return int(line.split()[1]) * 1024
    except OSError:
        pass
    return None


def resident_now() -> int | None:
    """This process's resident memory now (bytes; ``VmRSS``: :func:`status_bytes`), or
    None where the system does not tell it."""
    return status_bytes("VmRSS")


def per_process(n_total: int, size: int, n_local: int = 0) -> int:
    """Particles one process is sized for: all of them on one process, else N/K plus a
    quarter (:data:`MPI_SLACK`), or its own ``n_local`` where that is more."""
    if size <= 1:
        return int(n_total)
    return max(int(n_local), math.ceil(MPI_SLACK * int(n_total) / size))


def device_need(settings: Settings, n_total: int, size: int, n_local: int = 0,
                stored: bool = False) -> Callable[[DeviceInfo], int]:
    """Device memory (bytes) one process asks of a device for a run of ``n_total``
    particles on ``size`` processes: its memory plan on that device
    (:func:`hybridtree.run.plan.device_plan`, everything the run takes there; ``stored``:
    a restart with its snapshot's stored forces)."""
    n_proc = per_process(n_total, size, n_local)

    def need(info: DeviceInfo) -> int:
        return device_plan(settings, info, n_proc, size, stored=stored).total
    return need


def host_memory_available() -> tuple[int | None, str]:
    """(bytes of host memory available now, where that figure comes from): /proc/meminfo's
    MemAvailable, else the free pages (os.sysconf), lowered to a cgroup's memory limit less
    its use where one is set; (None, "") when nothing says."""
    avail, source = None, ""
    try:
        with open("/proc/meminfo") as f:
            for line in f:
                if line.startswith("MemAvailable:"):
                    avail, source = int(line.split()[1]) * 1024, "MemAvailable in /proc/meminfo"
                    break
    except (OSError, ValueError, IndexError):
        pass
    if avail is None:
        try:
            avail = os.sysconf("SC_AVPHYS_PAGES") * os.sysconf("SC_PAGE_SIZE")
            source = "free memory pages (os.sysconf)"
        except (OSError, ValueError, AttributeError):
            return None, ""
    for limit_file, used_file in (("/sys/fs/cgroup/memory.max", "/sys/fs/cgroup/memory.current"),
                                  ("/sys/fs/cgroup/memory/memory.limit_in_bytes",
                                   "/sys/fs/cgroup/memory/memory.usage_in_bytes")):
        try:
            limit = Path(limit_file).read_text().strip()
            if limit.isdigit() and int(limit) < 1 << 60:
                left = int(limit) - int(Path(used_file).read_text().strip())
                if left < avail:
                    avail, source = max(left, 0), f"the cgroup's limit {limit_file} less its use"
            break
        except (OSError, ValueError):
            continue
    return avail, source


def ics_count(settings: Settings) -> tuple[int, int]:
    """(particles, grid points) of the run's initial conditions, known before any is
    drawn or read: ics.n, a cosmological sphere's count from its grid (the volume of the
    sphere, at most n_grid^3), or a file's count from its datasets' shapes."""
    c = settings.ics
    if c.kind == "file":
        try:
            return count_particles(c.file, c.types), 0
        except SnapshotError as exc:
            raise RunError(f"initial conditions: {ics_file_error(settings, exc)}") from None
    if c.kind == "cosmo_box":
        return c.n_grid ** 3, c.n_grid ** 3
    if c.kind == "box_file":
        from ..io.box_ics import box_ics_count
        try:
            return box_ics_count(c.file), 0
        except SnapshotError as exc:
            raise RunError(f"initial conditions: {ics_file_error(settings, exc)}") from None
    if c.kind == "cosmo_sphere":
        grid = c.n_grid ** 3
        sphere = 4.0 / 3.0 * math.pi * (c.radius * c.n_grid / c.box) ** 3
        return min(grid, math.ceil(sphere)), grid
    return c.n, 0


def _size(nbytes: float) -> str:
    for unit, scale in (("TiB", 2 ** 40), ("GiB", 2 ** 30), ("MiB", 2 ** 20)):
        if nbytes >= scale or unit == "MiB":
            return f"{nbytes / scale:.3g} {unit}"
    return ""


def _node_sum(comm: Comm, value: int) -> int:
    """``value`` summed over the processes of this node (they share its host memory)."""
    if comm.mpi is None:
        return value
    from mpi4py import MPI
    local = comm.mpi.Split_type(MPI.COMM_TYPE_SHARED, key=comm.rank)
    try:
        return int(local.allreduce(int(value)))
    finally:
        local.Free()


def check_memory(settings: Settings, comm: Comm, n_total: int, *, n_local: int = 0,
                 grid: int = 0, restart: bool = False, drawn: bool = False) -> None:
    """Collective: RunError (or DeviceError) unless this machine has the memory for a run
    of ``n_total`` particles, checked before any particle is drawn, read or copied.

    Host: what the run's arrays take (the ``HOST_BYTES_*`` figures above, for this
    process's :func:`per_process` share; ``grid``: grid points of a cosmological sphere;
    ``restart``: reading a run snapshot; ``drawn``: a generated sphere drawn into the
    state, :data:`HOST_BYTES_DRAWN`; a CPU device's buffers, which are host memory),
    summed over the processes of a node, against :func:`host_memory_available`.  Device:
    the automatic choice takes only a device with :func:`device_need` of global memory
    (one named by the user is taken as named); the choice is remembered, so the run gets
    the same device.  Checked first with the least the run can need (so that an absurd N is
    refused at once), then with the chosen device."""
    size = comm.size
    n_proc = per_process(n_total, size, n_local)
    need = together(comm, _host_need, settings, comm, n_total, n_proc, grid, restart, None,
                    drawn)
    together(comm, _check_host, settings, comm, n_total, n_proc, grid, restart, None,
             _node_sum(comm, need), drawn)
    if size > 1 and settings.parallel.spread_devices:
        set_device_slot(node_local_rank(comm))
    rt = together(comm, _device_for, settings, n_total, n_proc, size, restart)
    need = together(comm, _host_need, settings, comm, n_total, n_proc, grid, restart, rt,
                    drawn)
    together(comm, _check_host, settings, comm, n_total, n_proc, grid, restart, rt,
             _node_sum(comm, need), drawn)


def _device_for(settings: Settings, n_total: int, n_proc: int, size: int,
                stored: bool = False):
    """The run's runtime, once its device is known to hold the run's plan
    (:func:`hybridtree.run.plan.device_plan`): a plan the device cannot hold is refused
    before the runtime (its context) is made, so nothing is allocated."""
    each = f" ({n_proc} per process)" if size > 1 else ""
    choice = settings.gravity.device or None
    try:                            # the plan on each device the choice weighs
        info = choose_device(choice, device_need(settings, n_total, size, n_proc, stored))
    except DeviceError as exc:
        if "the run needs" not in str(exc):         # not a matter of memory
            raise
        # none holds the plan: the words of the plan on the device the choice takes
        # when memory is not weighed (a mesh too large, or the owners that do not fit)
        info = choose_device(choice)
    plan = device_plan(settings, info, n_proc, size, stored=stored)
    why = plan.refusal()
    if plan.mesh_refusal():                     # the mesh's own words and remedy
        raise DeviceError(plan.mesh_refusal())
    if why:
        more = "more processes" if size > 1 else "several processes (mpiexec)"
        if stored and not device_plan(settings, info, n_proc, size).refusal():
            why += ("; a restart keeps its snapshot's forces as float64 parts, 16 bytes a "
                    "particle more than the run that wrote it held")
        raise DeviceError(f"N = {n_total} particles{each} {why}; use fewer particles or "
                          f"{more}")
    rt = get_runtime(choice, plan.total)
    rt.memory.context = plan.context            # the end: line's estimate of the driver's
    return rt


def _host_need(settings: Settings, comm: Comm, n_total: int, n_proc: int, grid: int,
               restart: bool, rt, drawn: bool = False) -> int:
    """Host bytes this process needs (:func:`check_memory`); ``rt`` None: the least."""
    per = (HOST_BYTES_DRAWN if drawn else HOST_BYTES_DEVICE_STATE) if rt is None else \
        per_particle_host(settings, rt, drawn)
    device_part = 0
    if rt is not None and rt.info.kind == "cpu":        # a CPU device's memory is the host's
        device_part = device_plan(settings, rt.info, n_proc, comm.size).total
    if restart:
        per = max(per, HOST_BYTES_RESTART)
    per_point = HOST_BYTES_PER_GRID_POINT
    if settings.ics.kind == "cosmo_box":
        lean = settings.ics.lpt == 1 or settings.memory.ics_fields == "float32"
        per_point = HOST_BYTES_PER_BOX_POINT["lean" if lean else "2lpt"]
    need = n_proc * per + HOST_FIXED_BYTES + grid * per_point + device_part
    if drawn and not restart and per == HOST_BYTES_DRAWN:
        # a snapshot's host copy (whole up to the writer's chunk), the drawing's blocks
        # and chunk: none of them grows with N beyond the writer's chunk
        per_thread, chunk = HOST_DRAW_BYTES
        need += (min(n_proc, SNAPSHOT_ROWS) * HOST_BYTES_SNAPSHOT_ROW
                 + draw_threads() * per_thread + chunk)
    if comm.size > 1 and comm.rank == 0 and settings.output.snapshot_files == "single":
        need += int(n_total) * HOST_BYTES_GATHER
    return need


def per_particle_host(settings: Settings, rt, drawn: bool = False) -> int:
    """Host bytes per particle of a run on ``rt``: its state on the device (``drawn``: a
    generated sphere drawn into it, :data:`HOST_BYTES_DRAWN`) or the host."""
    from ..state import state_backend
    g = settings.gravity
    if state_backend(rt, g.method, g.build) != "device":
        return HOST_BYTES_HOST_STATE
    return HOST_BYTES_DRAWN if drawn else HOST_BYTES_DEVICE_STATE


def _check_host(settings: Settings, comm: Comm, n_total: int, n_proc: int, grid: int,
                restart: bool, rt, node_need: int, drawn: bool = False) -> None:
    avail, source = host_memory_available()
    if avail is None or node_need <= avail:
        return
    size = comm.size
    who = (f"N = {n_total} particles" if size == 1 else
           f"N = {n_total} particles on {size} processes ({n_proc} per process: N/{size} "
           f"and a quarter for the domain decomposition)")
    what = ["reading the snapshot" if restart else "the particles while a snapshot is copied"]
    if drawn and (rt is None or per_particle_host(settings, rt, drawn) == HOST_BYTES_DRAWN):
        what = ["the model drawn into the device state and a snapshot's host copy"]
    if rt is not None and per_particle_host(settings, rt) == HOST_BYTES_HOST_STATE:
        what.append("the state on the host")
    if grid:
        what.append(f"the {grid}-point grid's fields")
    if rt is not None and rt.info.kind == "cpu":
        what.append("the CPU device's buffers")
    if size > 1 and settings.output.snapshot_files == "single":
        what.append("the gathered snapshot on process 0")
    where = " on this node" if size > 1 else ""
    more = "more nodes" if size > 1 else "several processes on more nodes (mpiexec)"
    raise RunError(f"{who} need about {_size(node_need)} of host memory{where} "
                   f"({', '.join(what)}), but {_size(avail)} is available ({source}); use "
                   f"fewer particles or {more}")


def check_ic_memory(n: int) -> None:
    """RunError unless this machine's host memory holds a model of ``n`` particles as
    ``hybridtree ic`` draws and writes it (:data:`HOST_BYTES_IC_COMMAND`); for the command
    to call before drawing."""
    need = int(n) * HOST_BYTES_IC_COMMAND + HOST_FIXED_BYTES
    avail, source = host_memory_available()
    if avail is not None and need > avail:
        raise RunError(f"N = {n} particles need about {_size(need)} of host memory (the model "
                       f"while it is written), but {_size(avail)} is available ({source}); "
                       f"use fewer particles")
