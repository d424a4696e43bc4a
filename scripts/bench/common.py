"""What every benchmark in scripts/bench/ shares (a helper module, not a benchmark).

- the repository root on ``sys.path`` (a script runs from a checkout without installing);
- the particles: a Plummer sphere in Hénon units (``plummer``, seed 1 by convention) and,
  for N where velocities would cost minutes, its positions only (``plummer_positions``);
- the device options (``add_device``) and the machine/device description (``run_header``);
- timing with one untimed warm-up around a public call (``best_of``, ``timed``);
- the error measure: |a - a_ref| / |a_ref| on sampled sinks against float64 direct
  summation (``sample_indices``, ``reference_acc``, ``rel_errors``);
- results as JSON (``write_json``, ``JsonLines``) and as markdown (``markdown_table``);
- the peak device memory while a child process runs (``Sampler``, ``nvidia-smi``), and one
  N of a benchmark run in a child process so (``run_child``).
"""

from __future__ import annotations

import argparse
import datetime
import json
import math
import os
import platform
import socket
import subprocess
import sys
import tempfile
import threading
import time
from pathlib import Path
from typing import Any, Callable, Iterable, TypeVar

import numpy as np

ROOT = Path(__file__).resolve().parents[2]
#: PYTHONPATH's entries: they come before the checkout, so that a copy of an older commit
#: put there (scripts/gpu_round.sh's ``code old``: build/old) is the hybridtree imported
_PATH = [p for p in os.environ.get("PYTHONPATH", "").split(os.pathsep) if p]


def _after_pythonpath() -> int:
    """Where the checkout goes in ``sys.path``: after PYTHONPATH's last entry, else after
    the script's folder (before site-packages either way)."""
    ours = {os.path.abspath(p) for p in _PATH}
    at = [i for i, p in enumerate(sys.path) if p and os.path.abspath(p) in ours]
    return max(at) + 1 if at else min(1, len(sys.path))


if str(ROOT) not in sys.path:                     # run from a checkout without installing
    sys.path.insert(_after_pythonpath(), str(ROOT))
#: Where ``python -m hybridtree`` children run: not the checkout, whose package ``-m``
#: would take before PYTHONPATH's (pass them absolute paths)
CHILD_CWD = tempfile.gettempdir()


def child_env(path_first: list[str] | None = None, **extra: str) -> dict[str, str]:
    """The environment of a child process that imports hybridtree: PYTHONPATH's entries
    first (``path_first``: these instead of this process's), then the checkout (as this
    process's ``sys.path``), plus ``extra``."""
    first = _PATH if path_first is None else path_first
    return {**os.environ, "PYTHONPATH": os.pathsep.join(first + [str(ROOT)]), **extra}

T = TypeVar("T")
PLUMMER_SEED, SAMPLE_SEED = 1, 2
#: Flops per interaction (Warren & Salmon's convention for a softened pair with potential).
FLOPS_PER_INTERACTION = 38


# -- particles ---------------------------------------------------------------------------

def plummer(n: int, seed: int = PLUMMER_SEED) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """(pos, vel, mass) of a Plummer sphere of ``n`` particles, Hénon units (G = M = 1)."""
    from hybridtree.ics import plummer as make
    return make(n, seed=seed)


def plummer_positions(n: int, seed: int) -> np.ndarray:
    """(n, 3) float64 positions of a Plummer sphere with scale length 3 pi / 16 (Hénon
    units): the radius by the inverse of the enclosed mass, isotropic directions, no
    velocities (at 2^28 those would cost minutes); the outermost 0.1 % of the mass left out."""
    rng = np.random.default_rng(seed)
    u = rng.uniform(1e-6, 0.999, n)
    r = (3 * np.pi / 16) / np.sqrt(u ** (-2.0 / 3.0) - 1.0)
    cos_t = rng.uniform(-1.0, 1.0, n)
    phi = rng.uniform(0.0, 2 * np.pi, n)
    sin_t = np.sqrt(1.0 - cos_t * cos_t)
    return np.stack([r * sin_t * np.cos(phi), r * sin_t * np.sin(phi), r * cos_t], axis=1)


def core_spacing(n: int) -> float:
    """Mean interparticle distance in the core of a Plummer sphere of ``n`` (Hénon units):
    the benchmarks' hybrid split takes r_out = 3 of these, r_in = r_out / 10."""
    return (n * 3 / (4 * math.pi * (3 * math.pi / 16) ** 3)) ** (-1 / 3)


# -- options and the machine -------------------------------------------------------------

def add_device(p: argparse.ArgumentParser, default: str | None = None) -> None:
    """The ``--device`` option every benchmark takes (hybridtree.device.choice's names)."""
    p.add_argument("--device", default=default,
                   help="OpenCL device choice (nvidia, gpu, cpu, P:D; default: the usual choice)")


def run_header(device_label: str) -> str:
    """One comment line naming the time, host, Python, numpy and device of a run."""
    now = datetime.datetime.now(datetime.timezone.utc).strftime("%Y-%m-%d %H:%M:%S UTC")
    return (f"# {now}  host={socket.gethostname()}  python={platform.python_version()}  "
            f"numpy={np.__version__}  device={device_label}")


def commit() -> str:
    """The checkout's short commit, or '?'."""
    try:
        return subprocess.run(["git", "rev-parse", "--short", "HEAD"], cwd=ROOT,
                              capture_output=True, text=True).stdout.strip() or "?"
    except OSError:
        return "?"


# -- timing ------------------------------------------------------------------------------

def best_of(call: Callable[[], T], repeat: int, seconds: Callable[[T], float],
            warmup: Callable[[], object] | None = None) -> T:
    """The result of ``repeat`` calls with the fewest ``seconds``, after one untimed
    warm-up call (kernel compilation, buffer growth must not count as run time)."""
    (warmup or call)()
    return min((call() for _ in range(repeat)), key=seconds)


def timed(call: Callable[[], T], repeat: int = 2, warmup: bool = False) -> tuple[T, float]:
    """(last result, best wall seconds by the caller's clock) of ``repeat`` calls."""
    if warmup:
        call()
    best, out = math.inf, None
    for _ in range(repeat):
        t0 = time.perf_counter()
        out = call()
        best = min(best, time.perf_counter() - t0)
    return out, best


# -- the error measure -------------------------------------------------------------------

def sample_indices(n: int, k: int, seed: int = SAMPLE_SEED) -> np.ndarray:
    """``min(k, n)`` distinct sink indices, the same for every run of the same n."""
    return np.random.default_rng(seed).choice(n, size=min(k, n), replace=False)


def reference_acc(pos: np.ndarray, mass: np.ndarray, eps: float, idx: np.ndarray,
                  device: str | None = None, softening: str = "plummer") -> np.ndarray:
    """Accelerations on ``pos[idx]`` by float64 direct summation on the host; above 2^21
    sources (minutes there) the device's hi/lo direct kernel (relative error ~1e-6)."""
    from hybridtree.gravity import accelerations, direct_reference
    # sinks= skips no self pair, but that pair has zero separation: zero force, so acc is exact
    if len(pos) > 1 << 21:
        return accelerations(pos, mass, eps, method="direct", sinks=pos[idx],
                             device=device, softening=softening).acc
    return direct_reference(pos, mass, eps, sinks=pos[idx], softening=softening)[0]


def rel_errors(acc: np.ndarray, ref: np.ndarray) -> np.ndarray:
    """|a - a_ref| / |a_ref| per sink."""
    return np.linalg.norm(acc - ref, axis=1) / np.linalg.norm(ref, axis=1)


# -- results -----------------------------------------------------------------------------

def write_json(path: str | Path | None, data: Any) -> None:
    """``data`` as indented JSON at ``path`` (nothing without a path)."""
    if path:
        Path(path).write_text(json.dumps(data, indent=1, default=float))


class JsonLines:
    """Rows printed as one JSON line each and, with a path, the file rewritten after each
    row (a run cut short keeps what it measured)."""

    def __init__(self, path: str | Path | None, wrap: Callable[[list], Any] | None = None):
        self.path, self.rows, self.wrap = path, [], wrap

    def emit(self, row: dict) -> None:
        self.rows.append(row)
        print(json.dumps(row), flush=True)
        if not self.path:
            return
        if self.wrap is None:
            Path(self.path).write_text("".join(json.dumps(r) + "\n" for r in self.rows))
        else:
            write_json(self.path, self.wrap(self.rows))


def fmt(x: Any, spec: str = ".4f") -> str:
    """A table cell: '-' for None."""
    return "-" if x is None else format(x, spec)


def markdown_table(head: Iterable[str], rows: Iterable[Iterable[Any]]) -> str:
    """A markdown table of already formatted cells."""
    head = list(head)
    lines = ["| " + " | ".join(head) + " |", "|" + "---|" * len(head)]
    lines += ["| " + " | ".join(str(c) for c in r) + " |" for r in rows]
    return "\n".join(lines)


# -- device memory -----------------------------------------------------------------------

class Sampler:
    """Peak of ``nvidia-smi``'s memory.used (MiB) while running; ``ok`` is False where
    there is no ``nvidia-smi`` (a CPU device)."""

    def __init__(self) -> None:
        self.peak = 0
        self.ok = True
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._run, daemon=True)

    @staticmethod
    def used() -> int | None:
        try:
            out = subprocess.run(["nvidia-smi", "--query-gpu=memory.used",
                                  "--format=csv,noheader,nounits"],
                                 capture_output=True, text=True, timeout=10)
            return int(out.stdout.split()[0])
        except (OSError, ValueError, IndexError, subprocess.SubprocessError):
            return None

    def _run(self) -> None:
        while not self._stop.is_set():
            u = self.used()
            if u is None:
                self.ok = False
                return
            self.peak = max(self.peak, u)
            time.sleep(0.05)

    def __enter__(self) -> "Sampler":
        self._thread.start()
        return self

    def __exit__(self, *exc) -> None:
        self._stop.set()
        self._thread.join()


def run_child(script: str, n: int, args: list[str], device: str | None, timeout: float,
              idle: int | None, tail: int = 3000) -> dict:
    """One N of a benchmark that runs each N in its own process: ``script --one n *args``
    (and ``--device device``), whose last line on stdout is its row as JSON, while this
    process samples the device's used memory (:class:`Sampler`).  Returns that row with
    ``device_peak_mib`` (the peak less ``idle``, MiB; None without ``nvidia-smi`` or an
    idle value) and ``wall_s`` (seconds, this process's clock), or ``{"n": n, "failed":
    why}``, said on stdout, where the child failed (the last ``tail`` characters of its
    stderr) or ran past ``timeout`` seconds."""
    cmd = [sys.executable, script, "--one", str(n), *args]
    if device:
        cmd += ["--device", device]
    t0 = time.perf_counter()
    with Sampler() as s:
        try:
            proc = subprocess.run(cmd, capture_output=True, text=True, timeout=timeout,
                                  env=child_env())
        except subprocess.TimeoutExpired:
            print(f"N = {n}: past {timeout} s", flush=True)
            return {"n": n, "failed": "timeout"}
    wall = time.perf_counter() - t0
    if proc.returncode:
        print(f"N = {n}: failed\n{proc.stderr[-tail:]}", flush=True)
        return {"n": n, "failed": proc.stderr[-tail:]}
    row = json.loads(proc.stdout.strip().splitlines()[-1])
    row["device_peak_mib"] = (s.peak - idle) if (s.ok and idle is not None) else None
    row["wall_s"] = wall
    return row
