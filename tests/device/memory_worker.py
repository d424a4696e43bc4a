"""Child of tests/device/test_memory.py: a run of N Plummer particles (argv[1]) after a
warm-up run on the same runtime; prints the device kind, the growth of the resident
high-water mark over the run, the ledger's peak during it (bytes) and N."""

import gc
import sys

import hybridtree
from hybridtree.ics import plummer


def _status(field: str) -> int:
    text = open("/proc/self/status").read()
    return int(text.split(field + ":")[1].split()[0]) * 1024


def main() -> None:
    n = int(sys.argv[1])
    pos, vel, mass = plummer(n, seed=1)
    warm = hybridtree.Simulation(*plummer(4096, seed=2), dt=1 / 128, eps=0.01, quiet=True)
    warm.evolve(1 / 128)             # kernels built, runtime made
    rt = warm._rt
    del warm
    gc.collect()
    rt.memory.reset_peak()
    base = rt.memory.total          # kept buffers of the warm-up, resident already
    before = _status("VmRSS")
    with open("/proc/self/clear_refs", "w") as f:      # the high-water mark from here
        f.write("5")
    sim = hybridtree.Simulation(pos, vel, mass, dt=1 / 128, eps=0.01, quiet=True)
    sim.evolve(2 / 128)
    grown = _status("VmHWM") - before
    print(rt.info.kind, grown, rt.memory.peak - base, n)


if __name__ == "__main__":
    main()
