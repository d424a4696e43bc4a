"""Run diagnostics: conserved quantities, structure, and where the wall-clock time went.

All quantities in internal units (G = 1).  Energies use the potentials the gravity
engine returns (tree or direct, with the run's softening): W = ½ Σ m φ.
"""

from __future__ import annotations

import csv
import json
import math
import sys
from pathlib import Path
from typing import IO, Any, Callable

import numpy as np

from ..gravity.parts import column_parts
from ..io.snapshot import atomic_path
from ..state.quantities import energies, lagrangian_radii, lagrangian_radii_across

# energies and the Lagrangian radii are the integrator's (hybridtree.state.quantities);
# re-exported for the analysis modules and tests that read them from here
__all__ = ["COLUMNS", "TYPE_COLUMNS", "DiagnosticsFile", "Reporter", "breakdown_record", "energies", "measure",
           "read_diagnostics", "lagrangian_radii", "lagrangian_radii_across"]

COLUMNS = ("step", "time", "kinetic", "potential", "total", "rel_energy_error",
           "px", "py", "pz", "lx", "ly", "lz", "virial_ratio", "r10", "r50", "r90",
           "wall_build", "wall_force", "wall_integrate", "wall_io", "wall_transfer",
           "wall_reduce", "interactions_per_s",
           "step_s", "soft_force_s", "hard_force_s", "soft_interactions", "hard_interactions",
           "processes", "imbalance", "t_decompose", "t_exchange", "t_let_select", "t_let_comm",
           "t_build", "t_walk", "t_pm", "t_transfer", "t_integrate", "t_reduce", "t_output",
           "let_soft_entries", "let_hard_entries", "let_soft_bytes", "let_hard_bytes", "a")

#: per-step phases (seconds per step, mean over the processes; hybridtree.device.clock says
#: what each one holds)
PHASES = ("decompose", "exchange", "let_select", "let_comm", "build", "walk", "pm",
          "transfer", "integrate", "reduce", "output")
#: LET volumes per step, summed over the processes (entries: cells + particles sent)
VOLUMES = ("let_soft_entries", "let_hard_entries", "let_soft_bytes", "let_hard_bytes")


def measure(step: int, t: float, mom: dict, radii: list[float], e0: float | None,
            now: dict, prev: dict, comm=None) -> dict[str, Any]:
    """One diagnostics record (a row of diagnostics.csv).  ``e0``: initial total energy.

    ``mom``: sums over all particles (:func:`hybridtree.device.reduce.host_moments`: kinetic,
    potential, momentum, angular_momentum); ``radii``: 10/50/90 % Lagrangian radii.
    ``now``/``prev``: the run's counters now and at the previous report: ``seconds``
    (cumulative per phase, :class:`hybridtree.device.clock.Clock`), ``counts`` (interactions and
    forces per part), ``step`` and ``wall``.  Rates and per-step figures are over the
    interval between them (interactions: summed over the processes; phases and force
    seconds: mean over the processes); wall columns are this process's cumulative seconds
    (collective with ``comm``).
    """
    sec, psec = now["seconds"], prev["seconds"]
    cnt, pcnt = now["counts"], prev["counts"]
    steps = now["step"] - prev["step"]
    diff = np.array([sec.get(k, 0.0) - psec.get(k, 0.0) for k in PHASES])
    size = 1 if comm is None else comm.size
    if size > 1:
        diff = comm.allreduce(diff) / size
    per_step = {f"t_{k}": (float(v / steps) if steps > 0 else float("nan"))
                for k, v in zip(PHASES, diff)}
    force_s = diff[PHASES.index("build")] + diff[PHASES.index("walk")]
    inter = cnt.get("interactions", 0) - pcnt.get("interactions", 0)
    if size > 1:
        inter = float(comm.allreduce(float(inter))[0])
        force_s = force_s * size       # the processes' force seconds, summed
    rate = inter / force_s if force_s > 0 else 0.0
    kin, epot = float(mom["kinetic"]), float(mom["potential"])
    p, ang = mom["momentum"], mom["angular_momentum"]
    tot = kin + epot
    ref = tot if e0 is None else e0
    walls = ("soft", "hard")
    part_s = {}
    forces, secs, n_int = {}, {}, {}
    for column in walls:        # a plain run's whole force stands for the soft one
        names = [q.name for q in column_parts(column)]
        forces[column] = sum(cnt.get(f"{k}_forces", 0) - pcnt.get(f"{k}_forces", 0)
                             for k in names)
        secs[column] = sum(sec.get(f"walk_{k}", 0.0) - psec.get(f"walk_{k}", 0.0)
                           for k in names)
        n_int[column] = sum(cnt.get(f"{k}_interactions", 0) - pcnt.get(f"{k}_interactions", 0)
                            for k in names)
    if size > 1:
        # every process takes part in every force: its interactions add up, its seconds
        # are averaged (as the t_* columns)
        summed = comm.allreduce(np.array([secs["soft"], secs["hard"], n_int["soft"],
                                          n_int["hard"]], dtype=float))
        secs = {"soft": summed[0] / size, "hard": summed[1] / size}
        n_int = {"soft": summed[2], "hard": summed[3]}
    for part in walls:
        f = forces[part]
        part_s[f"{part}_force_s"] = float(secs[part] / f) if f else 0.0
        part_s[f"{part}_interactions"] = float(n_int[part] / f) if f else 0.0
    return {"step": int(step), "time": float(t), "kinetic": kin, "potential": epot,
            "total": tot, "rel_energy_error": (tot - ref) / abs(ref) if ref else 0.0,
            "px": float(p[0]), "py": float(p[1]), "pz": float(p[2]),
            "lx": float(ang[0]), "ly": float(ang[1]), "lz": float(ang[2]),
            "virial_ratio": 2 * kin / abs(epot) if epot else float("nan"),
            "r10": radii[0], "r50": radii[1], "r90": radii[2],
            "wall_build": sec.get("build", 0.0), "wall_force": sec.get("walk", 0.0),
            "wall_integrate": sec.get("integrate", 0.0), "wall_io": sec.get("output", 0.0),
            "wall_transfer": sec.get("transfer", 0.0), "wall_reduce": sec.get("reduce", 0.0),
            "interactions_per_s": float(rate),
            "step_s": (now["wall"] - prev["wall"]) / steps if steps > 0 else 0.0,
            **part_s, "processes": size, **per_step}


def breakdown_record(comm, now: dict[str, float], prev: dict[str, float]) -> dict[str, Any]:
    """The LET columns of a diagnostics row (collective): per soft step over the interval
    between two reports, LET volumes summed over the processes, ``imbalance`` = max /
    mean of the processes' work (interaction counts; mean over the steps).  ``now``/``prev``: a stepper's cumulative
    :meth:`breakdown`.  NaN where there is nothing to say (one process; no step since
    the last report)."""
    size = 1 if comm is None else comm.size
    steps = now.get("steps", 0.0) - prev.get("steps", 0.0)
    keys = VOLUMES + ("imbalance",)
    rec: dict[str, Any] = {"imbalance": float("nan")}
    rec.update({k: float("nan") for k in VOLUMES})
    if size == 1:
        return rec
    tot = comm.allreduce(np.array([now.get(k, 0.0) - prev.get(k, 0.0) for k in keys]))
    if steps <= 0:
        return rec
    for i, k in enumerate(VOLUMES):
        rec[k] = float(tot[i] / steps)
    rec["imbalance"] = float(tot[-1] / size / steps)
    return rec


#: Columns of ``diagnostics_types.csv``: one row per particle type and report, where a run
#: holds several types (:meth:`hybridtree.integrate.stepper.Stepper.type_sums`)
TYPE_COLUMNS = ("step", "time", "type", "particles", "mass", "kinetic", "potential", "lx",
                "ly", "lz", "r10", "r50", "r90")


class DiagnosticsFile:
    """``diagnostics.csv`` (or another table of ``columns``): one row per report, flushed
    at once (a crash loses nothing)."""

    def __init__(self, path: Path, keep_until_step: int | None = None,
                 columns: tuple[str, ...] = COLUMNS):
        """Start a new file, or (restart) keep the rows up to ``keep_until_step`` and
        append after them."""
        self.path = path
        self.columns = columns
        rows = []
        if keep_until_step is not None and path.exists():
            rows = [r for r in read_diagnostics(path) if int(float(r["step"])) <= keep_until_step]
        tmp = atomic_path(path)
        with open(tmp, "w", newline="") as f:
            w = csv.DictWriter(f, columns)
            w.writeheader()
            w.writerows({k: r.get(k, "") for k in columns} for r in rows)
        tmp.replace(path)
        self._f: IO[str] = open(path, "a", newline="")
        self._w = csv.DictWriter(self._f, columns)

    def write(self, record: dict[str, Any]) -> None:
        self._w.writerow({k: (repr(float(v)) if isinstance(v, (float, np.floating)) else v)
                          for k, v in record.items() if k in self.columns})
        self._f.flush()

    def close(self) -> None:
        self._f.close()


#: Columns of ``timebins.csv`` (block time steps; :class:`hybridtree.integrate.schemes.BinStats`).
TIMEBIN_COLUMNS = ("bin", "dt", "particles", "substeps", "seconds", "interactions", "forces")


def write_timebins(path: Path, rows: list[dict[str, Any]]) -> None:
    """``timebins.csv``: one row per time bin, cumulative since the run (or its
    continuation) began; replaced whole at each report."""
    tmp = atomic_path(path)
    with open(tmp, "w", newline="") as f:
        w = csv.DictWriter(f, TIMEBIN_COLUMNS)
        w.writeheader()
        w.writerows(rows)
    tmp.replace(path)


def read_diagnostics(path: str | Path) -> list[dict[str, str]]:
    with open(path, newline="") as f:
        return list(csv.DictReader(f))


class Reporter:
    """Where a run talks: one compact line per report on stdout (or one JSON object per
    line with ``log_json``), the same lines in ``run.log``, and a progress bar (tqdm) on
    stderr.  ``quiet`` silences stdout and the bar; ``echo = False`` keeps the lines in
    the log only (the Python API's default).  ``progress``: None = when stderr is a
    terminal or the run is in a notebook."""

    def __init__(self, log_path: Path | None, quiet: bool = False, log_json: bool = False,
                 progress: bool | None = None, append: bool = False, echo: bool = True):
        self.quiet, self.log_json, self.echo = quiet, log_json, echo
        if progress is None:
            progress = sys.stderr.isatty() or "ipykernel" in sys.modules
        self.progress = progress and not quiet
        self._log = open(log_path, "a" if append else "w") if log_path else None
        self._bar: Any = None
        #: a cosmological run's time unit in Gyr: its lines then give a, z and t in Gyr
        self.gyr: float | None = None
        #: the progress bar's text for a time t (internal units); a cosmological run's
        #: gives a and z
        self.when: Callable[[float], str] = lambda t: f"t={t:.5g}"
        #: the name of the energy error on the lines: dE/E, or dE/|W| where a Λ term
        #: makes E nearly 0 (:meth:`hybridtree.run.output.RunOutput.energy_error`)
        self.error_name = "dE/E"
        self._flag = ""                 # on the progress bar once the energy error is large

    def _emit(self, text: str, record: dict[str, Any] | None = None) -> None:
        """``text`` into the log; on stdout as text, or with ``log_json`` as the JSON
        ``record`` (nothing when there is none); nothing on stdout when quiet."""
        if self._log:
            self._log.write(text + "\n")
            self._log.flush()
        if self.quiet or not self.echo:
            return
        if self.log_json:
            if record is None:
                return
            text = json.dumps(record, default=_jsonable)
        if self._bar is not None:          # above the bar, which is redrawn below
            self._bar.write(text, file=sys.stdout)
            sys.stdout.flush()
        else:
            print(text, flush=True)

    def message(self, text: str) -> None:
        """A line for the log (and stdout unless quiet or JSON)."""
        self._emit(text)

    def warning(self, text: str) -> None:
        """A line ``warning: text`` for the log and stdout (JSON: a "warning" event)."""
        self._emit(f"warning: {text}", {"event": "warning", "message": text})

    def event(self, kind: str, **fields: Any) -> None:
        """A structured event: a JSON line with ``log_json``, else a plain line."""
        text = f"{kind}: " + " ".join(f"{k}={v}" for k, v in fields.items())
        self._emit(text, {"event": kind, **fields})

    def report(self, rec: dict[str, Any], over: float | None = None, first: bool = False
               ) -> None:
        """The line of a diagnostics row ``rec``; ``over``: the limit its energy error is
        beyond (output.energy_warning), said on the line and, from now on, on the
        progress bar; ``first``: the first time, also said in a warning line after it."""
        a = rec.get("a", float("nan"))
        if self.gyr is not None and math.isfinite(a):
            when = f"a {a:<7.4g} z {1 / a - 1:<7.4g} t {rec['time'] * self.gyr:<6.4g} Gyr"
        else:
            when = f"t {rec['time']:<9.5g}"
        mark = ""
        if over is not None:
            mark = f" (> {over:g})"
            self._flag = f" energy error > {over:g}"
        line = (f"step {rec['step']:>7d}  {when} E {rec['total']:<+12.6g}"
                f" {self.error_name} {rec['rel_energy_error']:+.2e}{mark}  "
                f"|P| {math.hypot(rec['px'], rec['py'], rec['pz']):.1e}"
                f"  2K/|W| {rec['virial_ratio']:.4f}  r10/50/90 {rec['r10']:.3g}/{rec['r50']:.3g}/"
                f"{rec['r90']:.3g}  {rec['interactions_per_s']:.2e} int/s")
        extra = {} if over is None else {"energy_warning": over}
        self._emit(line, {"event": "diagnostics", **rec, **extra})
        if over is not None and first:
            self.warning(f"the energy error {self.error_name} = {rec['rel_energy_error']:+.3g}"
                         f" at step {rec['step']} is beyond output.energy_warning = {over:g}: "
                         f"the orbits are not followed accurately (shorter steps, time.dt, or "
                         f"more softening, gravity.eps, usually help); the run goes on")

    def begin(self, n_steps: int) -> None:
        """A progress bar for the next ``n_steps`` steps (when progress is shown)."""
        self.end()
        if self.progress and n_steps > 0:
            from tqdm.auto import tqdm
            self._bar = tqdm(total=n_steps, unit="step", file=sys.stderr, leave=False,
                             dynamic_ncols=True, mininterval=0.25)

    def tick(self, t: float) -> None:
        """One step done; ``t``: the time reached (internal units)."""
        if self._bar is not None:
            self._bar.set_postfix_str(self.when(t) + self._flag, refresh=False)
            self._bar.update(1)

    def end(self) -> None:
        """Remove the progress bar."""
        if self._bar is not None:
            self._bar.close()
            self._bar = None

    def close(self) -> None:
        self.end()
        if self._log:
            self._log.close()
            self._log = None


def _jsonable(v: Any) -> Any:
    if isinstance(v, (np.integer,)):
        return int(v)
    if isinstance(v, (np.floating,)):
        return float(v)
    return str(v)
