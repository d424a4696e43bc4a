"""The periodic mesh's long-range call on K processes (a benchmark, not a test):

    mpiexec -n K python scripts/bench/pm_slabs.py --n 1048576 --mesh 128 [--split x|mixed]

Each process takes its share of a clumpy periodic particle set ("x": a slab of x, as a
decomposition cutting x gives; "mixed": every K-th particle, so every process's
particles reach every plane), then times ``add_forces`` of the device mesh by the
caller's clock (a barrier before, the slowest process after; best of --repeat after a
warm-up call).  Prints one JSON line: the seconds, this code's mesh arrays per process
(device bytes) and the host's peak resident memory per process.  Run from a worktree
of an older commit (PYTHONPATH) it measures that code's mesh the same way: before the
slabs (gravity/pm_slabs.py) every process summed the whole mesh with an Allreduce.
"""

from __future__ import annotations

import argparse
import json
import resource
import time

import numpy as np

from hybridtree.device.choice import get_runtime
from hybridtree.device.transfer import upload
from hybridtree.gravity.periodic import Periodic
from hybridtree.parallel import world


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--n", type=int, default=1 << 20)
    ap.add_argument("--mesh", type=int, default=128)
    ap.add_argument("--split", choices=("x", "mixed"), default="x")
    ap.add_argument("--repeat", type=int, default=3)
    ap.add_argument("--device", default=None)
    args = ap.parse_args()
    comm = world()
    rt = get_runtime(args.device)
    rng = np.random.default_rng(5)
    n = args.n
    pos = np.concatenate([rng.normal(0.3, 0.03, (n // 2, 3)), rng.random((n - n // 2, 3))]) % 1.0
    key = (np.floor(pos[:, 0] * comm.size).astype(int) if args.split == "x"
           else np.arange(n) % comm.size)
    mine = np.flatnonzero(key == comm.rank)
    m = len(mine)
    p = Periodic(1.0, args.mesh)
    try:
        from hybridtree.gravity.pm_slabs import SlabMesh
        mesh = SlabMesh(rt, p, comm) if comm.size > 1 else None
        code = "slabs"
    except ImportError:
        mesh, code = None, "allreduce"
    if mesh is None:
        from hybridtree.gravity.pm_device import DeviceMesh
        mesh = (DeviceMesh(rt, p) if comm.size == 1 or code == "slabs"
                else DeviceMesh(rt, p, comm.allreduce))
    bufs = upload(rt, [pos[mine], np.full(m, 1.0 / n), np.zeros((m, 3)), np.zeros(m)],
                  [None] * 4)
    times = []
    for _ in range(args.repeat + 1):
        comm.barrier()
        rt.queue.finish()
        t0 = time.perf_counter()
        mesh.add_forces(bufs[0], bufs[1], m, bufs[2], bufs[3])
        rt.queue.finish()
        times.append(float(comm.allreduce(time.perf_counter() - t0, "max")[0]))
    nm = args.mesh
    if code == "slabs" and comm.size > 1:
        mesh_bytes = 16 * nm * nm * (2 * mesh.ns + 3 * mesh.ny + 2 * mesh.window[1])
        window = mesh.window[1]
    else:
        mesh_bytes, window = 16 * nm ** 3 * 3, nm
    rss = comm.allgather(resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024.0)
    windows = comm.allgather(window)
    if comm.rank == 0:
        print(json.dumps({"code": code, "processes": comm.size, "n": n, "mesh": nm,
                          "split": args.split, "device": rt.info.label,
                          "seconds": min(times[1:]), "first": times[0],
                          "mesh_bytes_per_process": mesh_bytes, "window_planes": windows,
                          "peak_rss_mib": [round(r) for r in rss]}))


if __name__ == "__main__":
    main()
