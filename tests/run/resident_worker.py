"""Child of tests/run/test_resident_plan.py: a run of 4096 Plummer particles through
``hybridtree.Simulation`` (the runtime made, the kernels built or taken from the build
caches), its resident memory then (``ready``), and a run of N (argv[1]), three steps.
Prints the device kind, N, the process's resident high-water mark, ``ready``, the plan's
prediction of the high-water mark from ``ready`` and from its own assumptions
(:func:`hybridtree.run.size.resident_need`) and the file-backed part of the resident memory
at the end (bytes)."""

import gc
import sys

import hybridtree
from hybridtree.ics import plummer
from hybridtree.run.size import resident_need, resident_now, status_bytes as _status


def _run(n: int) -> hybridtree.Simulation:
    pos, vel, mass = plummer(n, seed=1)
    sim = hybridtree.Simulation(pos, vel, mass, dt=1 / 128, eps=0.01, quiet=True)
    del pos, vel, mass
    sim.evolve(3 / 128)
    return sim


def main() -> None:
    n = int(sys.argv[1])
    sim = _run(4096)
    del sim
    gc.collect()
    ready = resident_now()
    sim = _run(n)
    need = resident_need(sim.settings, sim._rt.info, n, ready)
    assumed = resident_need(sim.settings, sim._rt.info, n)
    print(sim._rt.info.kind, n, _status("VmHWM"), ready, need, assumed, _status("RssFile"))


if __name__ == "__main__":
    main()
