"""Child of tests/run/test_resident_plan.py: a run of N Plummer particles (argv[1]) through
``hybridtree.Simulation``, three steps; prints the device kind, the process's resident
high-water mark (bytes), the plan's prediction of it
(:func:`hybridtree.run.size.resident_need`) and N."""

import sys

import hybridtree
from hybridtree.ics import plummer
from hybridtree.run.size import resident_need


def main() -> None:
    n = int(sys.argv[1])
    pos, vel, mass = plummer(n, seed=1)
    sim = hybridtree.Simulation(pos, vel, mass, dt=1 / 128, eps=0.01, quiet=True)
    del pos, vel, mass
    sim.evolve(3 / 128)
    hwm = int(open("/proc/self/status").read().split("VmHWM:")[1].split()[0]) * 1024
    print(sim._rt.info.kind, hwm, resident_need(sim.settings, sim._rt.info, n), n)


if __name__ == "__main__":
    main()
