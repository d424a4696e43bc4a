"""Run by tests/parallel/test_mpi.py under ``mpiexec -n K``: decomposition, exchange, parallel forces.

Every process makes the same Plummer sphere, keeps every K-th particle (a deliberately
non-spatial start), decomposes, exchanges and computes forces; rank 0 writes the
gathered results to the .npz file named on the command line.
"""

import json
import sys

import numpy as np
import pyopencl as cl

from hybridtree.ics import plummer
from hybridtree.parallel import PARTICLE_DTYPE, decompose, exchange, parallel_accelerations, world
from hybridtree.gravity.engine import GravitySettings
from hybridtree.particles import Particles
from hybridtree.device.choice import get_runtime
from hybridtree.device.clock import Clock
from hybridtree.parallel.engine import ParallelEngine
from hybridtree.parallel.migrate import migrate, sample_positions
from hybridtree.parallel.stepping import ParallelStepper
from hybridtree.state import DeviceState
from hybridtree.gravity.periodic import Periodic
from hybridtree.gravity.splitting import Changeover


def run(n: int, out: str, opts: dict) -> None:
    """A short leapfrog (or hybrid) run; rank 0 writes the energy history."""
    # messages of at most opts["chunk"] bytes: the large path
    comm = world(int(opts["chunk"])) if opts.get("chunk") else world()
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
    steps, domains, owned = [], [], True
    for _ in range(opts["steps"]):
        before = stepper.breakdown()
        stepper.step(opts["dt"])
        after = stepper.breakdown()
        steps.append({k: after.get(k, 0.0) - before.get(k, 0.0) for k in after})
        d = stepper.domains
        domains.append(np.concatenate([d.x, d.y.ravel(), d.z.ravel()]))
        owned &= bool(np.all(d.owner(stepper.particles().pos) == comm.rank))
    e1 = energy()
    count = comm.allreduce(float(stepper.state.n))[0]
    ids = comm.gather_array(stepper.particles().ids)
    owned = comm.allreduce(float(owned), "min")[0]
    if comm.rank == 0:
        np.savez(out, e0=e0, e1=e1, count=count, ids=ids, owned=owned,
                 domains=np.array(domains), backend=stepper.backend,
                 imbalance=np.array([s["imbalance"] for s in steps]),
                 migrants=sum(s.get("migrants", 0.0) for s in steps),
                 let_soft=sum(s.get("let_soft_entries", 0.0) for s in steps),
                 let_hard=sum(s.get("let_hard_entries", 0.0) for s in steps))


def device_forces(n: int, out: str, opts: dict) -> None:
    """As host_forces(), on the path of a run with its state on the device: sampled
    decomposition, migration of the particles that change domain, and the parallel force
    engine (device LET selection, merged tree walked by the local groups)."""
    comm = world()
    rt = get_runtime()
    pos, vel, mass = plummer(n, seed=7)
    mine = np.flatnonzero(np.arange(n) % comm.size == comm.rank)
    split = Changeover(opts.get("r_in", 0.01), opts.get("r_out", 0.1), "dll")
    g = GravitySettings(eps=opts.get("eps", 0.01), theta=opts.get("theta", 0.5),
                        multipole=opts.get("multipole", "monopole"), changeover=split,
                        remove_net_force=False)
    state = DeviceState(rt, Particles(pos[mine], vel[mine], mass[mine], mine.astype(np.uint64)),
                        ("full", "hard"))

    def sums(p: Particles) -> np.ndarray:
        return comm.allreduce(np.array([len(p), p.mass.sum(),
                                        *(p.mass[:, None] * p.vel).sum(axis=0)]))

    before = sums(state.download())
    engine = ParallelEngine(g, rt, comm, Clock(rt), overlap=opts.get("overlap", False))
    dom = decompose(comm, state.n, cost=state.n, take=lambda idx: sample_positions(state, idx))
    migrate(comm, state, dom, engine.work)
    p = state.download()
    after = sums(p)
    owned = bool(np.all(dom.owner(p.pos) == comm.rank))
    let = {}
    for part in ("full", "hard"):
        engine.compute(state, (part,))
        key = "hard" if part == "hard" else "soft"
        let[part] = comm.allreduce(np.array([0.0, engine.step[f"let_{key}_entries"],
                                             engine.step[f"let_{key}_bytes"]]))
    q = state.download()
    acc = {}
    for part, buf in state.acc.items():
        acc[part] = np.empty((state.n, 3))
        cl.enqueue_copy(rt.queue, acc[part], buf)
    table = np.column_stack([q.ids.astype(np.float64), acc["full"], q.pot, acc["hard"],
                             np.zeros(state.n), np.full(state.n, comm.rank),
                             np.full(state.n, float(owned))])
    gathered = comm.gather_rows(table.reshape(-1, 11))
    if comm.rank == 0:
        np.savez(out, table=gathered, before=before, after=after, let_full=let["full"],
                 let_hard=let["hard"], size=comm.size)


def periodic_set(n: int) -> tuple[np.ndarray, np.ndarray]:
    """Half a clump split over the unit box's 8 corners, half uniform (masses 1 / n)."""
    rng = np.random.default_rng(5)
    pos = np.concatenate([rng.normal(0, 0.03, (n // 2, 3)), rng.random((n - n // 2, 3))])
    return pos % 1.0, np.full(n, 1.0 / n)


def periodic_forces(n: int, out: str, opts: dict) -> None:
    """TreePM forces of :func:`periodic_set` in the unit box on the run's path (state on
    the device, sampled decomposition, migration, the periodic LET and the mesh summed
    over the processes), the short and the long range apart; rank 0 writes id, a_short,
    a_long, pot and the LET entries sent."""
    comm = world()
    rt = get_runtime()
    pos, mass = periodic_set(n)
    mine = np.flatnonzero(np.arange(n) % comm.size == comm.rank)
    g = GravitySettings(eps=0.0, theta=0.5, multipole="monopole", remove_net_force=False,
                        periodic=Periodic(1.0, 32), time_split=True,
                        opening=opts.get("opening", "geometric"))
    state = DeviceState(rt, Particles(pos[mine], np.zeros((len(mine), 3)), mass[mine],
                                      mine.astype(np.uint64)), g.parts)
    engine = ParallelEngine(g, rt, comm, Clock(rt))
    dom = decompose(comm, state.n, cost=state.n, take=lambda idx: sample_positions(state, idx))
    migrate(comm, state, dom, engine.work)
    for _ in range(2 if g.opening == "relative" else 1):    # the second with a_old
        engine.compute(state, g.parts)
    q = state.download()
    acc = {}
    for part, buf in state.acc.items():
        acc[part] = np.empty((state.n, 3))
        cl.enqueue_copy(rt.queue, acc[part], buf)
    table = np.column_stack([q.ids.astype(np.float64), acc["short"], acc["long"], q.pot])
    gathered = comm.gather_rows(table.reshape(-1, 8))
    sent = comm.allreduce(engine.step["let_soft_entries"])[0]
    if comm.rank == 0:
        np.savez(out, table=gathered, let=sent, size=comm.size)


def slab_mesh(n: int, out: str, opts: dict) -> None:
    """The long range of :func:`periodic_set` (some particles moved just outside the box,
    as a drift leaves them) by the mesh in slabs over the processes, for each case of
    ``opts["cases"]`` in turn (one process start and one set of shared kernel builds for
    all the cases of a process count): each process takes the particles of its share of
    x (a case's "split" "x": windows of part of the box; "mixed": every K-th particle,
    windows of the whole box; "idle": rank 0 has none); rank 0 writes id, acc, pot of
    case i as ``table{i}`` and the processes' windows as ``windows{i}``."""
    from hybridtree.gravity.pm_slabs import SlabMesh
    from hybridtree.device.transfer import download, upload
    comm = world()
    rt = get_runtime()
    pos, mass = periodic_set(n)
    pos[::7] += np.where(pos[::7] < 0.5, -1e-3, 1e-3)      # just outside the box
    results = {}
    for i, case in enumerate(opts["cases"]):
        split = case.get("split", "x")
        if split == "x":
            key = np.floor(np.clip(pos[:, 0], 0.0, 0.999999) * comm.size).astype(int)
        elif split == "idle":
            key = 1 + np.arange(n) % (comm.size - 1)
        else:
            key = np.arange(n) % comm.size
        mine = np.flatnonzero(key == comm.rank)
        p = Periodic(1.0, case["n_mesh"], order=case.get("order", 3),
                     interlace=case.get("interlace", True))
        mesh = SlabMesh(rt, p, comm)
        m = len(mine)
        acc, pot = np.zeros((m, 3)), np.zeros(m)
        for _ in range(2):                  # twice: the kept buffers serve a second call
            acc[:], pot[:] = 0.0, 0.0
            bufs = upload(rt, [pos[mine], mass[mine], acc, pot], [None] * 4)
            mesh.add_forces(bufs[0], bufs[1], m, bufs[2], bufs[3])
            download(rt, [(bufs[2], acc), (bufs[3], pot)])
            rt.queue.finish()
        table = np.column_stack([mine.astype(np.float64), acc, pot])
        results[f"table{i}"] = comm.gather_rows(table.reshape(-1, 5))
        results[f"windows{i}"] = np.array(comm.allgather(mesh.window))
    if comm.rank == 0:
        np.savez(out, pos=pos, mass=mass, size=comm.size, **results)


def main() -> None:
    n, out = int(sys.argv[1]), sys.argv[2]
    opts = json.loads(sys.argv[3]) if len(sys.argv) > 3 else {}
    if opts.get("mode") == "runs":          # several in one start: the i-th to out.i.npz
        for i, one in enumerate(opts["runs"]):
            job(n, f"{out}.{i}.npz", one)
        if world().rank == 0:
            np.savez(out, runs=len(opts["runs"]))
        return None
    return job(n, out, opts)


def job(n: int, out: str, opts: dict) -> None:
    """What ``opts`` asks for (its "mode"; none: the forces on the path "path")."""
    if opts.get("mode") == "slabs":
        return slab_mesh(n, out, opts)
    if opts.get("mode") == "run":
        return run(n, out, opts)
    if opts.get("mode") == "periodic":
        return periodic_forces(n, out, opts)
    if opts.get("path") == "device":
        return device_forces(n, out, opts)
    return host_forces(n, out, opts)


def host_forces(n: int, out: str, opts: dict) -> None:
    """Decomposition, exchange and the parallel forces of the host path (host LET
    selection); rank 0 writes the gathered table, the sums before and after the exchange
    and the LETs' sizes."""
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
