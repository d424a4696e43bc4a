"""`hybridtree pk` and `hybridtree halos` on one snapshot by the caller's clock (a
benchmark, not a test):

    python scripts/bench/analysis.py SNAPSHOT [--repeat 2] [--mesh N] [--only pk|halos]
                                              [--breakdown]

Each command runs as its own process (``python -m hybridtree ...``, what a user types),
timed around the whole process: start-up and imports, reading the snapshot, the work,
writing the file.  Every run prints one JSON line: the command, its seconds, the
snapshot, its size in bytes, the device (HYBRIDTREE_DEVICE, as for every command; the
host where there is none) and the command's own last line.  The files go to a temporary
folder, removed afterwards.  A command that fails stops the benchmark with its status.
``--breakdown`` adds, after each command's runs, one more run in a process of
``scripts/bench/analysis_breakdown.py``: a JSON line of the seconds of each stage (imports,
reading, device context, builds, deposit, FFT, shells; the FOF's ghosts, slabs,
union-find, catalogue).
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path


def timed(argv: list[str]) -> tuple[float, str]:
    """Seconds of ``python -m hybridtree ARGV`` by the caller's clock, and its last line."""
    start = time.perf_counter()
    # in the temporary folder: `-m` takes the package of its working folder before
    # PYTHONPATH's, so from the checkout an old code's PYTHONPATH would time the new code
    done = subprocess.run([sys.executable, "-m", "hybridtree", *argv], capture_output=True,
                          text=True, cwd=tempfile.gettempdir())
    seconds = time.perf_counter() - start
    if done.returncode != 0:
        sys.stderr.write(done.stderr)
        raise SystemExit(done.returncode)
    lines = done.stdout.strip().splitlines()
    return seconds, lines[-1] if lines else ""


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("snapshot", type=Path)
    ap.add_argument("--repeat", type=int, default=2, help="runs of each command (the "
                    "first one also builds the device's kernels if they are not cached)")
    ap.add_argument("--mesh", type=int, help="hybridtree pk --mesh (default: its own)")
    ap.add_argument("--only", choices=("pk", "halos"), help="time one command only")
    ap.add_argument("--breakdown", action="store_true", help="after each command's runs, "
                    "one run that times its stages (scripts/bench/analysis_breakdown.py)")
    args = ap.parse_args()
    args.snapshot = args.snapshot.resolve()         # the children run in the temporary folder
    if not args.snapshot.exists():
        ap.error(f"{args.snapshot} does not exist")
    with tempfile.TemporaryDirectory() as tmp:
        commands = {"pk": ["pk", str(args.snapshot), "--out", str(Path(tmp) / "pk.txt")]
                    + (["--mesh", str(args.mesh)] if args.mesh else []),
                    "halos": ["halos", str(args.snapshot), "--output", tmp, "--overwrite"]}
        for name, argv in commands.items():
            if args.only and name != args.only:
                continue
            for run in range(args.repeat):
                seconds, last = timed(argv)
                print(json.dumps({"command": name, "run": run, "seconds": round(seconds, 3),
                                  "snapshot": str(args.snapshot),
                                  "bytes": args.snapshot.stat().st_size,
                                  "device": os.environ.get("HYBRIDTREE_DEVICE", "default"),
                                  "output": last}), flush=True)
            if args.breakdown:
                stages = [sys.executable, str(Path(__file__).with_name("analysis_breakdown.py")),
                          name, str(args.snapshot)] + (
                              ["--mesh", str(args.mesh)] if args.mesh and name == "pk" else [])
                done = subprocess.run(stages, capture_output=True, text=True)
                if done.returncode != 0:
                    sys.stderr.write(done.stderr)
                    raise SystemExit(done.returncode)
                print(done.stdout.strip().splitlines()[-1], flush=True)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
