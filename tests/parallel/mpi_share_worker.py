"""Run by tests/parallel/test_mpi_share.py under ``mpiexec -n K``; rank 0 writes an .npz file.

``ics OUT SPECS``: every process makes its share of each generated model in SPECS (a JSON
list of ``[ics]`` tables) with ``simulation.initial_conditions``; rank 0 writes them
gathered and sorted by ID (pickled gathers, so that this test does not rest on the
byte paths that ``exchange`` checks).  ``ics_by_k OUT SPECS``: the same on the first k
processes, for every k up to K, in one start.

``exchange OUT LIMITS``: ``alltoallv``, ``ialltoallv`` and ``gather_array`` of rows of a
structured dtype with uneven counts (zeros included), once under each
``Comm.chunk_bytes`` in LIMITS (a JSON list; null = the module's default); rank 0 writes
what every process received.
"""

import json
import sys

import numpy as np

from hybridtree.config import validate
from hybridtree.parallel import comm as comm_module
from hybridtree.parallel.comm import world
from hybridtree.run.simulation import initial_conditions
from hybridtree.config.units import Units

#: 33 bytes a row: pieces of a small chunk limit split rows and fields
ROW = np.dtype([("src", "<u8"), ("pos", "<f8", (3,)), ("flag", "i1")])


def send_count(src: int, dst: int) -> int:
    """Rows process ``src`` sends to ``dst`` (K = 3): uneven, process 1 sends nothing,
    process 2 nothing to process 0."""
    if src == 1 or (src, dst) == (2, 0):
        return 0
    return 5 + 17 * src + 23 * dst + 7 * src * dst


def rows_for(src: int, dst: int) -> np.ndarray:
    """The rows ``src`` sends to ``dst``: values that name their origin."""
    k = send_count(src, dst)
    r = np.zeros(k, ROW)
    r["src"] = 1000 * src + dst
    r["pos"] = np.arange(3 * k).reshape(k, 3) + 0.25 * src + 0.125 * dst
    r["flag"] = (np.arange(k) % 251) - 125
    return r


def gather_rows(src: int) -> np.ndarray:
    """The rows ``src`` contributes to gather_array: process 1 none."""
    k = 0 if src == 1 else 40 + 31 * src
    r = np.zeros(k, ROW)
    r["src"] = src
    r["pos"] = np.arange(3 * k).reshape(k, 3) * (src + 1.5)
    r["flag"] = src - 1
    return r


def exchange(out: str, limits: list) -> None:
    default = comm_module.CHUNK_BYTES
    comm = world()
    k = comm.size
    send = np.concatenate([rows_for(comm.rank, j) for j in range(k)])
    counts = np.array([send_count(comm.rank, j) for j in range(k)])
    results = {}
    for i, limit in enumerate(limits):
        comm.chunk_bytes = default if limit is None else int(limit)
        a = comm.alltoallv(send, counts)
        pending = comm.ialltoallv(send, counts)
        while not pending.test():
            pass
        b = pending.wait()
        assert np.array_equal(b, pending.wait())        # wait() again gives the rows again
        mine = gather_rows(comm.rank)
        g = {root: comm.gather_array(mine, root=root) for root in range(k)}
        for root in range(k):
            assert (g[root] is None) == (comm.rank != root)
        got = comm.mpi.gather((a, b, g[comm.rank]), root=0)
        if comm.rank == 0:
            for r, (a_r, b_r, g_r) in enumerate(got):
                results[f"a_{i}_{r}"] = a_r.view(np.uint8).reshape(-1)
                results[f"b_{i}_{r}"] = b_r.view(np.uint8).reshape(-1)
                results[f"g_{i}_{r}"] = g_r.view(np.uint8).reshape(-1)
    if comm.rank == 0:
        np.savez(out, **results)


def ics(out: str | None, specs: list, comm=None) -> dict:
    """The models of ``specs`` on ``comm`` (the world's by default); rank 0 writes them to
    ``out`` where given, and returns them (the other ranks: {})."""
    comm = comm or world()
    results = {}
    for i, spec in enumerate(specs):
        table = {"ics": {k: v for k, v in spec.items() if k != "cosmology"}}
        if "cosmology" in spec:         # a cosmological sphere starts at z_start's age
            table["cosmology"] = spec["cosmology"]
        settings = validate(table)
        units = Units(settings.units.length_cm, settings.units.mass_g)
        p, t0 = initial_conditions(settings, units, comm)
        assert (t0 > 0) == ("cosmology" in spec)
        got = comm.mpi.gather((p.ids, p.pos, p.vel, p.mass), root=0)
        if comm.rank == 0:
            ids, pos, vel, mass = (np.concatenate([g[j] for g in got]) for j in range(4))
            order = np.argsort(ids, kind="stable")
            results.update({f"ids_{i}": ids[order], f"pos_{i}": pos[order],
                            f"vel_{i}": vel[order], f"mass_{i}": mass[order],
                            f"counts_{i}": np.array([len(g[0]) for g in got])})
    if comm.rank == 0 and out:
        np.savez(out, **results)
    return results


def ics_by_k(out: str, specs: list) -> None:
    """:func:`ics` on the first k processes for k = 1 .. K in turn (a communicator of
    their own each, split from the world's), rank 0 writing all as ``k{k}_<name>``: one
    mpiexec start for every k rather than one each (their starts were most of the time)."""
    from mpi4py import MPI
    from hybridtree.parallel.comm import Comm
    comm = world()
    results = {}
    for k in range(1, comm.size + 1):
        inside = comm.rank < k
        sub = comm.mpi.Split(0 if inside else MPI.UNDEFINED, comm.rank)
        if inside:
            got = ics(None, specs, Comm(sub))
            results.update({f"k{k}_{name}": v for name, v in got.items()})
            sub.Free()
    if comm.rank == 0:
        np.savez(out, **results)


if __name__ == "__main__":
    mode, out, arg = sys.argv[1], sys.argv[2], json.loads(sys.argv[3])
    {"ics": ics, "ics_by_k": ics_by_k, "exchange": exchange}[mode](out, arg)
