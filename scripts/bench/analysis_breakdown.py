"""Where ``hybridtree pk`` and ``hybridtree halos`` spend their time, in one process (a
benchmark's aid, not a test): ``scripts/bench/analysis.py SNAPSHOT --breakdown`` runs this.

    python scripts/bench/analysis_breakdown.py pk|halos SNAPSHOT [--mesh N]

Prints one JSON line: the seconds of each stage by the wall clock, in order (imports,
reading, the device's context, the kernels' builds and launches ... writing), and the
whole.  The stages are timed by wrapping the functions that do them; device stages wait
for the queue at their end (so their times include the device's work, and the device
does not overlap them with the next, as it may in a plain run).  The FOF's slabs run on
every core at once: their line is the wall time of the whole threaded part.
"""

from __future__ import annotations

import argparse
import json
import sys
import tempfile
import threading
import time
from collections import defaultdict
from pathlib import Path

START = time.perf_counter()
TIMES: dict[str, float] = defaultdict(float)
#: the process's CPU seconds (all threads) of each stage: on a loaded machine the wall
#: clock says little, these say what the work costs
CPU: dict[str, float] = defaultdict(float)


def wrap(module, name: str, label: str, finish=None) -> None:
    """Replace ``module.name`` by a function that adds its wall time to TIMES[label]
    (after ``finish()``, for device work enqueued inside); calls from the FOF's worker
    threads are not counted (their time is the slabs')."""
    fn = getattr(module, name, None)
    if fn is None:                  # another version of the code: not timed
        return

    def timed(*args, **kwargs):
        if threading.current_thread() is not threading.main_thread():
            return fn(*args, **kwargs)
        t0, c0 = time.perf_counter(), time.process_time()
        try:
            out = fn(*args, **kwargs)
            if finish is not None:
                finish(args)
            return out
        finally:
            TIMES[label] += time.perf_counter() - t0
            CPU[label] += time.process_time() - c0
    setattr(module, name, timed)


def pk(snapshot: str, mesh: int | None, out: Path) -> None:
    t0, c0 = time.perf_counter(), time.process_time()
    from hybridtree.analysis import power, power_device
    from hybridtree.gravity import pm_device
    TIMES["import"], CPU["import"] = time.perf_counter() - t0, time.process_time() - c0
    wrap(power, "read_periodic", "read snapshot")
    wrap(power_device, "analysis_runtime", "device context")

    def done(args):
        args[0].rt.queue.finish()
    wrap(pm_device.MeshKernels, "__init__", "kernels (build or cache)")
    wrap(pm_device.MeshKernels, "_compile_fft", "fft plan (build or cache)")
    wrap(power_device, "upload", "upload", finish=lambda a: a[0].queue.finish())
    wrap(pm_device.MeshKernels, "_assign", "deposit (sort + assign)", finish=done)
    wrap(power_device, "launch", "shell sums (device)", finish=lambda a: a[0].queue.finish())
    wrap(power, "_host_shell_sums", "host assign + fft + shells (no device)")
    wrap(power, "device_shell_sums", "device part (all)")
    wrap(power, "device_meshes", "device part up to the mesh read back (older code)")
    t0, c0 = time.perf_counter(), time.process_time()
    ps, snap = power.snapshot_power(snapshot, n_mesh=mesh, runtime=power_device.analysis_runtime())
    for table, now in ((TIMES, time.perf_counter() - t0), (CPU, time.process_time() - c0)):
        table["power_spectrum (all)"] = now - table["read snapshot"] - table["device context"]
    t0, c0 = time.perf_counter(), time.process_time()
    out.write_text(power.power_table(ps, snap, snapshot))
    TIMES["write table"], CPU["write table"] = time.perf_counter() - t0, time.process_time() - c0


def halos(snapshot: str, out: Path) -> None:
    t0, c0 = time.perf_counter(), time.process_time()
    from hybridtree.analysis import halos as halos_pkg
    from hybridtree.analysis.halos import catalogue, fof
    TIMES["import"], CPU["import"] = time.perf_counter() - t0, time.process_time() - c0
    wrap(catalogue, "_read_snapshot", "read snapshot")
    wrap(catalogue, "friends_of_friends", "fof (all)")
    wrap(fof, "_with_ghosts", "fof: periodic ghosts")
    if hasattr(fof, "_slabs"):
        wrap(fof, "_slabs", "fof: slab order")
    wrap(fof, "_union_find", "fof: global union-find")
    if hasattr(fof, "_first_member_labels"):
        wrap(fof, "_first_member_labels", "fof: labels")
    wrap(catalogue, "_catalogue", "catalogue: order + properties")
    wrap(halos_pkg, "write_catalogue", "write catalogue")
    runtime = None
    try:                                # the device FOF (issue 58), where the code has it
        from hybridtree.analysis.halos import fof_device
    except ImportError:
        fof_device = None
    if fof_device is not None:
        wrap(fof_device, "halo_runtime", "device context")
        wrap(fof_device, "device_roots", "fof: device (cells, sort, link rounds)")
        runtime = fof_device.halo_runtime()
    cat = (halos_pkg.find_halos(snapshot, runtime=runtime) if runtime is not None
           else halos_pkg.find_halos(snapshot))
    halos_pkg.write_catalogue(out, cat, snapshot, overwrite=True)


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("command", choices=("pk", "halos"))
    ap.add_argument("snapshot")
    ap.add_argument("--mesh", type=int)
    args = ap.parse_args()
    with tempfile.TemporaryDirectory() as tmp:
        if args.command == "pk":
            pk(args.snapshot, args.mesh, Path(tmp) / "pk.txt")
        else:
            halos(args.snapshot, Path(tmp) / "fof_tab.hdf5")
    for table in (TIMES, CPU):
        if "fof (all)" in table:
            # the slabs' k-d trees and pairs, on every core: the rest of the FOF
            inner = sum(v for k, v in table.items() if k.startswith("fof: "))
            table["fof: slabs' k-d trees, pairs (threads; the rest)"] = table["fof (all)"] - inner
    print(json.dumps({"command": args.command, "snapshot": args.snapshot,
                      "stages_s": {k: round(v, 3) for k, v in TIMES.items()},
                      "stages_cpu_s": {k: round(v, 3) for k, v in CPU.items()},
                      "process_s": round(time.perf_counter() - START, 3),
                      "process_cpu_s": round(time.process_time(), 3)}))
    return 0


if __name__ == "__main__":
    sys.exit(main())
