"""Functions the tests share: error measures, small run configs, a state with its scheme,
the checks of a command's error line and of two walks' interaction counts, the MPI
launcher of the tests that start many processes, and a module's set-up made once a run
for both pytest-xdist workers."""

import fcntl
import os
import pickle
import shutil
import signal
import sys
from collections.abc import Callable
from pathlib import Path
from typing import TypeVar

import numpy as np

from hybridtree.device.choice import get_runtime

#: the repository (tests start scripts and ``python -m hybridtree`` from it)
ROOT = Path(__file__).resolve().parents[1]

#: the test now running (set by conftest), so that :func:`mpiexec` can check its marker
CURRENT: dict = {}


def mpiexec() -> str:
    """The MPI launcher (the venv's, from the mpi extra; else the one on PATH).  Only a
    test marked ``mpi`` may start processes with it (``pytest -m "not mpi"`` then leaves
    out every test that needs MPI)."""
    node = CURRENT.get("node")
    if node is not None:
        assert node.get_closest_marker("mpi") is not None, (
            f"{node.nodeid} starts mpiexec: mark it @pytest.mark.mpi")
    local = Path(sys.executable).parent / "mpiexec"
    found = str(local) if local.exists() else shutil.which("mpiexec")
    assert found, "mpiexec not found: install the mpi extra (pip install -e '.[mpi]')"
    return found


T = TypeVar("T")


def once_per_run(tmp_path_factory, name: str, make: Callable[[], T]) -> T:
    """``make()`` once per pytest run, its value shared by pytest-xdist's workers (pickled
    under ``name`` in the run's temporary folder, which the workers share; a lock makes a
    worker that asks while another makes it wait for that value).  For a module fixture's
    costly set-up (an mpiexec run, an Ewald sum): pytest-xdist deals a module's tests to
    both workers one at a time, so each worker set the module up again, both at once
    (docs/testing.md, session 37).  The value is the one ``make()`` gives in this run, by
    whichever worker asks first; a ``make()`` that fails writes nothing (the other worker
    then runs it again, and fails the same way).  ``name`` must name the set-up in the
    whole suite (module and fixture, and the key of a set-up made per key)."""
    root = tmp_path_factory.getbasetemp()
    if os.environ.get("PYTEST_XDIST_WORKER"):       # popen-gwN/: the run's folder above
        root = root.parent
    path = root / f"once-{name}.pickle"
    with open(root / f"once-{name}.lock", "w") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)
        if path.is_file():
            return pickle.loads(path.read_bytes())
        value = make()
        part = path.with_suffix(".part")
        part.write_bytes(pickle.dumps(value))
        part.rename(path)
        return value


def rel_err(a: np.ndarray, ref: np.ndarray) -> np.ndarray:
    return np.linalg.norm(a - ref, axis=1) / np.linalg.norm(ref, axis=1)


def run_config(n: int, seed: int, theta: float, steps: int, snapshot_every: int,
               diag_every: int, dt: float = 1 / 64) -> str:
    """TOML of a small Plummer run for the driver tests (eps 0.02, n_leaf 8, output in
    "out"): ``steps`` steps of ``dt``, a snapshot every ``snapshot_every`` steps."""
    return f"""
[ics]
kind = "plummer"
n = {n}
seed = {seed}
[gravity]
eps = 0.02
theta = {theta}
n_leaf = 8
[time]
dt = {dt}
t_end = {steps * dt}
[output]
dir = "out"
snapshot_dt = {snapshot_every * dt}
diag_every = {diag_every}
"""


def device_state_mark():
    """The skip mark (a module's ``pytestmark``) of the tests of device states: a device
    state needs double precision on the device."""
    import pytest
    return pytest.mark.skipif(not get_runtime().has_fp64,
                              reason="no double precision on this device: no device state")


def state_settings(*names: str) -> dict:
    """The gravity settings the device-state tests step, by name, in the order of ``names``:
    "plain", "hybrid" (a changeover with 3 hard steps), "relative" (the relative opening
    criterion) and "plain quadrupole"."""
    from hybridtree.gravity.engine import GravitySettings
    from hybridtree.gravity.splitting import Changeover
    every = {
        "plain": GravitySettings(eps=0.01, theta=0.6, n_leaf=8),
        "hybrid": GravitySettings(eps=0.01, theta=0.6, n_leaf=8,
                                  changeover=Changeover(0.01, 0.1), n_hard=3),
        "relative": GravitySettings(eps=0.01, theta=0.6, n_leaf=8, opening="relative",
                                    alpha=0.002),
        "plain quadrupole": GravitySettings(eps=0.01, theta=0.6, multipole="quadrupole"),
    }
    return {name: every[name] for name in names}


def stepping(pos, vel, mass, g, backend: str = "host", pot_part: str | None = None,
             uniform: bool = False):
    """(state, scheme) of particles with gravity settings ``g``
    (:class:`hybridtree.gravity.engine.GravitySettings`) on the session's device, forces computed
    at the start; ``backend``: "host" or "device" state (``pot_part``: its float32 parts,
    ``uniform``: one mass where all are equal, :class:`hybridtree.state.DeviceState`)."""
    from hybridtree.device.clock import Clock
    from hybridtree.gravity.engine import ForceEngine
    from hybridtree.particles import Particles
    from hybridtree.integrate.choose import scheme_for
    from hybridtree.state import make_state
    rt = get_runtime()
    clock = Clock(rt)
    p = Particles(pos, vel, mass, np.arange(1, len(mass) + 1, dtype=np.uint64))
    state = make_state(p, g.parts, backend, rt, clock, pot_part=pot_part, uniform=uniform)
    scheme = scheme_for(g, ForceEngine(g, rt, clock))
    scheme.start(state)
    return state, scheme


def clumps_across_faces(seed: int) -> tuple[np.ndarray, float, float, np.random.Generator]:
    """Points for the periodic friends-of-friends tests: 1500, half in Gaussian clumps
    (sigma 0.4) on a face, an edge and a corner of a periodic box of side 10 and one inside
    it (so some points lie outside the box), half uniform in it.  Returns (positions,
    linking length 0.75 mean spacings: near percolation, box side, the generator that drew
    them, for what the test draws next)."""
    rng = np.random.default_rng(seed)
    n, box = 1500, 10.0
    centres = np.array([[0.0, 5.0, 5.0], [10.0, 10.0, 5.0], [0.0, 0.0, 0.0], [5.0, 5.0, 5.0]])
    pos = np.concatenate([centres[rng.integers(0, 4, n // 2)]
                          + rng.normal(scale=0.4, size=(n // 2, 3)),
                          rng.uniform(0, 10, (n - n // 2, 3))])
    return pos, 0.75 * 10 / n ** (1 / 3), box, rng


def same_counts_but_at_the_border(pp1, pc1, pp2, pc2):
    """Interaction counts of two different walk kernels.  Under -cl-fast-relaxed-math
    each kernel may round a cell's distance its own way, so a cell exactly at the border
    of the opening test can be opened by one and accepted by the other: seen on the
    H100 (walk_lists with LBUF = 4 against tree_walk_simd, host-built tree): a leaf of
    one particle taken as a cell by one walk and as a particle by the other, for the 12
    sinks of one group (the force is the same).  Anything more is a different walk."""
    same = (pp1 == pp2) & (pc1 == pc2)
    assert same.mean() > 0.998, f"{(~same).sum()} sinks differ"
    total1, total2 = (pp1 + pc1).sum(), (pp2 + pc2).sum()
    assert abs(int(total1) - int(total2)) <= 1e-5 * total1


def interruptible() -> None:
    """``preexec_fn`` of a child process that a test sends Ctrl-C: SIGINT back to its
    default, as in a user's terminal.  A test run started in the background by a shell
    without job control ignores SIGINT, children inherit that, and Python then installs
    no KeyboardInterrupt handler at all."""
    signal.signal(signal.SIGINT, signal.SIG_DFL)


def one_error_line(capsys, *needles: str) -> str:
    """The command line's report of a user error: exactly one line on stderr, starting
    "hybridtree: error: ", without a traceback, holding every one of ``needles``;
    returns the message after that prefix."""
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and err.startswith("hybridtree: error: "), err
    assert "Traceback" not in err
    for needle in needles:
        assert needle in err, err
    return err.strip()[len("hybridtree: error: "):]
