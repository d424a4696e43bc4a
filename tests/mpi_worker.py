"""Run by tests/test_mpi.py under ``mpiexec -n K``: decomposition, exchange, parallel forces.

Every process makes the same Plummer sphere, keeps every K-th particle (a deliberately
non-spatial start), decomposes, exchanges and computes forces; rank 0 writes the
gathered results to the .npz file named on the command line.
"""

import json
import sys

import numpy as np

from hybridtree.ics import plummer
from hybridtree.parallel import PARTICLE_DTYPE, decompose, exchange, parallel_accelerations, world
from hybridtree.engine import GravitySettings
from hybridtree.io.snapshot import Particles
from hybridtree.opencl import get_runtime
from hybridtree.parallel.stepping import ParallelStepper
from hybridtree.splitting import Changeover


def run(n: int, out: str, opts: dict) -> None:
    """A short leapfrog (or hybrid) run; rank 0 writes the energy history."""
    comm = world()
    pos, vel, mass = plummer(n, seed=7)
    mine = np.flatnonzero(np.arange(n) % comm.size == comm.rank)
    p = Particles(pos[mine], vel[mine], mass[mine], mine.astype(np.uint64))
    split = Changeover(opts["r_in"], opts["r_out"], "dll") if opts.get("hybrid") else None
    g = GravitySettings(eps=0.01, theta=0.5, changeover=split, n_hard=opts.get("n_hard", 4))
    stepper = ParallelStepper(g, p, get_runtime(), comm)
    stepper.start(False)

    def energy() -> float:
        m = stepper.moments()
        return m["kinetic"] + m["potential"]

    e0 = energy()
    steps = []
    for _ in range(opts["steps"]):
        before = stepper.breakdown()
        stepper.step(opts["dt"])
        after = stepper.breakdown()
        steps.append({k: after.get(k, 0.0) - before.get(k, 0.0) for k in after})
    e1 = energy()
    count = comm.allreduce(float(stepper.state.n))[0]
    if comm.rank == 0:
        np.savez(out, e0=e0, e1=e1, count=count,
                 imbalance=np.array([s["imbalance"] for s in steps]),
                 let_soft=sum(s.get("let_soft_entries", 0.0) for s in steps),
                 let_hard=sum(s.get("let_hard_entries", 0.0) for s in steps))


def main() -> None:
    n, out = int(sys.argv[1]), sys.argv[2]
    opts = json.loads(sys.argv[3]) if len(sys.argv) > 3 else {}
    if opts.get("mode") == "run":
        return run(n, out, opts)
    comm = world()
    pos, vel, mass = plummer(n, seed=7)
    mine = np.flatnonzero(np.arange(n) % comm.size == comm.rank)
    p = np.empty(len(mine), PARTICLE_DTYPE)
    p["pos"], p["vel"], p["mass"], p["id"] = pos[mine], vel[mine], mass[mine], mine
    before = comm.allreduce(np.array([len(p), p["mass"].sum(),
                                      *(p["mass"][:, None] * p["vel"]).sum(axis=0)]))
    dom = decompose(comm, p["pos"], cost=len(p))
    p = exchange(comm, p, dom.owner(p["pos"]))
    owned = bool(np.all(dom.owner(p["pos"]) == comm.rank))
    after = comm.allreduce(np.array([len(p), p["mass"].sum(),
                                     *(p["mass"][:, None] * p["vel"]).sum(axis=0)]))
    split = Changeover(opts.get("r_in", 0.01), opts.get("r_out", 0.1), "dll")
    rows, let = [], {}
    for part in ("full", "hard"):
        f = parallel_accelerations(comm, p["pos"], p["mass"], opts.get("eps", 0.01),
                                   opts.get("theta", 0.5), multipole=opts.get("multipole",
                                                                              "monopole"),
                                   build=opts.get("build", "device"), split=split, part=part,
                                   overlap=opts.get("overlap", False))
        rows.append(np.column_stack([f.acc, f.pot]))
        let[part] = comm.allreduce(np.array([f.let_sent["cells"], f.let_sent["particles"],
                                             f.let_sent["bytes"]]))
    table = np.column_stack([p["id"].astype(np.float64), *rows,
                             np.full(len(p), comm.rank), np.full(len(p), float(owned))])
    gathered = comm.gather_rows(table.reshape(-1, 11))
    if comm.rank == 0:
        np.savez(out, table=gathered, before=before, after=after, let_full=let["full"],
                 let_hard=let["hard"], size=comm.size)


if __name__ == "__main__":
    main()
