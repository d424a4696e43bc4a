"""The host memory a periodic box's initial conditions take on the way into a run: the
start of ``hybridtree run`` (:func:`hybridtree.run.start.new_start`) for
configs/cosmo_box.toml at ``N_GRID``³, and the particles put into a state's rows (a
target that keeps nothing, so that only the ICs' own memory is measured).  Prints one
JSON line: the resident memory before (after a warm-up box of 8³), the peak after
(/proc/self/status VmRSS, VmHWM), their difference per grid point, and the seconds.

    python tests/ics/box_memory_worker.py N_GRID [LPT [FIELDS]]    (FIELDS: float64, float32)
"""

import json
import sys
import time
from pathlib import Path

from hybridtree.config.settings import load_config, parse_overrides
from hybridtree.parallel.comm import Comm
from hybridtree.run.size import status_bytes
from hybridtree.run.start import new_start

ROOT = Path(__file__).resolve().parents[2]


class Discard:
    """A row target of ``n`` rows that keeps nothing."""

    def __init__(self, n: int) -> None:
        self.n = n

    def upload_rows(self, lo, p, columns=()) -> None:
        assert 0 <= lo and lo + len(p) <= self.n


def start(n_grid: int, lpt: int, fields: str) -> None:
    sets = [f"ics.n_grid={n_grid}", f"ics.lpt={lpt}"]
    if fields != "float64":
        sets.append(f"memory.ics_fields={fields}")
    settings = load_config(ROOT / "configs" / "cosmo_box.toml", parse_overrides(sets))
    _, begun = new_start(settings, Comm(None))
    rows = begun.particles
    if hasattr(rows, "fill"):       # made into the state's rows; else made whole already
        rows.fill(Discard(len(rows)))


def main() -> None:
    n = int(sys.argv[1])
    lpt = int(sys.argv[2]) if len(sys.argv) > 2 else 2
    fields = sys.argv[3] if len(sys.argv) > 3 else "float64"
    start(8, lpt, fields)            # warm-up: the FFT threads, the drawing threads
    before = status_bytes("VmRSS")
    t0 = time.perf_counter()
    start(n, lpt, fields)
    seconds = time.perf_counter() - t0
    peak = status_bytes("VmHWM")
    print(json.dumps({"n_grid": n, "lpt": lpt, "fields": fields, "rss_before": before,
                      "hwm": peak, "bytes_per_point": (peak - before) / n ** 3,
                      "seconds": round(seconds, 2)}))


if __name__ == "__main__":
    main()
