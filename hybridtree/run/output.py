"""What a run writes (:class:`RunOutput`, a part of
:class:`hybridtree.run.simulation.Simulation`): the run log and diagnostics rows,
scheduled snapshots and restart points, ``save``, the end line, and the removal of what a
failed start wrote.  The simulation decides when (after which step); this object decides
how and where.  Units internal (G = 1)."""

from __future__ import annotations

import math
import shutil
import time
from pathlib import Path
from typing import Any

import numpy as np

from hybridtree import __version__
from ..analysis.diagnostics import (TYPE_COLUMNS, DiagnosticsFile, Reporter, breakdown_record, measure,
                                    write_timebins)
from ..config.settings import Settings
from ..config.units import GYR_S, Units
from ..device.memory import run_fields
from ..errors import HybridtreeError
from ..state.quantities import with_lambda_potential
from ..particles import N_TYPES
from ..integrate.schedule import Cosmic, Uniform
from ..io.background import BackgroundWriter
from ..io.snapshot import (SnapshotError, SnapshotWriteError, atomic_path, chunks_of,
                           resolve_snapshot, snapshot_name)
from ..parallel.comm import Comm
from ..parallel.snapshots import agree, write_run_snapshot
from .folder import RESTART_STEM
from .options import box_of
from .guards import Signals

__all__ = ["RunOutput"]

PHASES = ("build", "walk", "pm", "transfer", "integrate", "reduce", "output")


class RunOutput:
    """The output of one run: ``folder`` (None: nothing is written but what :meth:`save`
    writes), the diagnostics ``records`` kept in memory, the reporter (progress bar, log),
    the snapshot numbering and the files a failed start must remove (``made``).

    Made by the simulation before its state exists; :meth:`attach` gives it the stepper
    and the initial energy once the first forces are known."""

    def __init__(self, settings: Settings, units: Units, comm: Comm, sched: Uniform | Cosmic,
                 lam: float, folder: Path | None, number: int, written: int | None):
        self.settings, self.units, self.comm, self.sched = settings, units, comm, sched
        self.lam = lam                   # the Λ term's λ (0: none)
        self.folder = folder
        self.number = number             # the next scheduled snapshot's number
        self.written = written           # the step of the last snapshot written
        self.records: list[dict[str, Any]] = []
        self.made: list[Path] = []       # what a failed start removes
        self.writer: BackgroundWriter | None = None
        self.diag: DiagnosticsFile | None = None
        self.type_diag: DiagnosticsFile | None = None      # diagnostics_types.csv
        self.types: list[int] = []          # the GADGET types of a run of several
        self.type_totals = np.zeros(N_TYPES, np.int64)     # their particles, all processes
        self.reporter: Reporter | None = None
        self.stepper: Any = None
        self.e0: float | None = None     # the energy the errors are measured against
        self._prev: dict[str, Any] = {}
        self._prev_bd: Any = None
        # the largest |energy error| reported; the step whose report first passed the limit
        self.error_max, self.warned = 0.0, None

    # -- the files --------------------------------------------------------------------------

    def open(self, step: int, in_place: bool, quiet: bool, progress: bool | None,
             log_json: bool, echo: bool) -> Reporter:
        """The run log, diagnostics.csv and the background writer (with a folder, on
        process 0); the reporter (every process; only process 0's prints)."""
        root = self.comm.rank == 0
        log = None
        if self.folder is not None and root:
            log = self.folder / "run.log"
            if not in_place:        # a failed start removes them; a continued run's stay
                self.made += [log, self.folder / "diagnostics.csv"]
            self.diag = DiagnosticsFile(self.folder / "diagnostics.csv",
                                        keep_until_step=step if in_place else None)
            self._in_place, self._first = in_place, step
            # one process writes in the background; under MPI a write is a collective
            self.writer = BackgroundWriter(self.made.extend) if self.comm.size == 1 else None
        self.reporter = Reporter(log, quiet or not root, log_json, progress if root else False,
                                 append=in_place, echo=echo)
        if self.sched.cosmological:     # a, z and t in Gyr on its lines and its bar
            gyr, times, scale = self.units.time_s / GYR_S, self.sched.times, self.sched.scale

            def when(t: float) -> str:
                a = float(np.interp(t, times, scale))      # t is a step's: exact
                return f"a={a:.4g} z={1 / a - 1:.4g} t={t * gyr:.4g} Gyr"
            self.reporter.gyr, self.reporter.when = gyr, when
        self.reporter.error_name = "dE/|W|" if self.lam else "dE/E"
        return self.reporter

    def attach(self, stepper: Any, step: int, e0: float | None) -> dict:
        """The state whose output this is, from ``step``; ``e0``: a continued run's initial
        energy (None: measured now).  Returns the moments measured (or {})."""
        self.stepper = stepper
        self._find_types()
        mom: dict = {}
        if e0 is None:
            mom = self.moments()
            e0 = float(mom["kinetic"] + mom["potential"])
        self.e0 = e0
        self._prev = self._counters(step)
        self._prev_bd = stepper.breakdown()
        return mom

    def _find_types(self) -> None:
        """Collective: a run of several particle types (not a cosmological one) reports
        each type in ``diagnostics_types.csv``."""
        counts = self.comm.allreduce(self.stepper.type_counts().astype(float))
        present = [t for t in range(N_TYPES) if counts[t] > 0]
        if len(present) < 2 or self.sched.cosmological:
            return
        self.types, self.type_totals = present, np.rint(counts).astype(np.int64)
        if self.diag is not None:
            path = self.folder / "diagnostics_types.csv"
            if not self._in_place:
                self.made.append(path)
            self.type_diag = DiagnosticsFile(path, self._first if self._in_place else None,
                                             TYPE_COLUMNS)

    def _report_types(self, step: int, rows: list[dict]) -> None:
        """One row per type (:meth:`hybridtree.integrate.stepper.Stepper.type_sums`, where
        the particles are: nothing is downloaded)."""
        if self.type_diag is not None:
            with self.stepper.clock.host("output"):
                for row in rows:
                    self.type_diag.write({"step": step, "time": self.sched.time(step), **row})

    def discard(self, created: bool) -> None:
        """Remove what a start that failed had written (``created``: the folder too)."""
        self._close_tables()
        self.finish_writes()
        if self.reporter is not None:
            self.reporter.close()
        for p in self.made:
            p.unlink(missing_ok=True)
        if created and self.comm.rank == 0:
            shutil.rmtree(self.folder, ignore_errors=True)

    def abandon(self) -> None:
        """An error ends the run: nothing more is written, what was written stays."""
        self._close_tables()
        self.reporter.close()

    def _close_tables(self) -> None:
        for table in (self.diag, self.type_diag):
            if table is not None:
                table.close()

    # -- diagnostics ----------------------------------------------------------------------

    def moments(self) -> dict:
        """The stepper's sums, with the Λ term's potential energy -½ λ Σ m r² added to
        the potential (a cosmological run's energy is then conserved)."""
        return with_lambda_potential(self.stepper.moments(), self.lam)

    def energy_error(self, mom: dict) -> float:
        """(E - E0) / |E0| of the sums ``mom`` (:meth:`moments`); with a Λ term (an
        expanding sphere's E is nearly 0: exactly 0 for a flat, homogeneous one)
        (E - E0) / |W|, W = ½ Σ m φ the gravitational potential energy alone (the Λ
        term's -½ λ Σ m r² is part of E, not of the norm)."""
        if box_of(self.settings) is not None:
            # comoving coordinates: E is no constant of the motion (the Layzer-Irvine
            # equation would be the check); no number that looks like an error
            return float("nan")
        total = float(mom["kinetic"]) + float(mom["potential"])
        if self.lam and mom["gravity"]:
            return (total - self.e0) / abs(mom["gravity"])
        return (total - self.e0) / abs(self.e0) if self.e0 else 0.0

    def _counters(self, step: int) -> dict[str, Any]:
        return {"seconds": self.stepper.clock.snapshot(), "counts": dict(self.stepper.counts),
                "step": step, "wall": time.perf_counter()}

    def report(self, step: int) -> None:
        """A diagnostics row (collective): kept, written to diagnostics.csv, printed."""
        mom = self.moments()
        whole = (mom["com"], mom["mass"])    # with the types' sums: one multisection for all
        radii, rows = (self.stepper.report_sums(self.types, self.type_totals, whole) if self.types
                       else (self.stepper.lagrangian_radii(*whole), []))
        now, now_bd = self._counters(step), self.stepper.breakdown()
        rec = measure(step, self.sched.time(step), mom, radii, self.e0, now, self._prev,
                      self.comm)
        rec.update(breakdown_record(self.comm, now_bd, self._prev_bd))
        rec["a"] = self.sched.a(step)
        # against |W| where a Λ term makes E nearly 0 (measure() divides by |E0|)
        rec["rel_energy_error"] = self.energy_error(mom)
        self._prev, self._prev_bd = now, now_bd
        self.records.append(rec)
        if self.types:
            self._report_types(step, rows)
        over = self._energy_check(step, rec["rel_energy_error"])
        with self.stepper.clock.host("output"):
            if self.diag is not None:
                self.diag.write(rec)
                bins = self.timebins()
                if bins:
                    write_timebins(self.diag.path.with_name("timebins.csv"), bins)
            self.reporter.report(rec, over, first=self.warned == step)

    def _energy_check(self, step: int, error: float) -> float | None:
        """output.energy_warning where the energy error ``error`` is beyond it, else None
        (also where it is 0, and for NaN: a periodic box's); keeps the largest error and
        the first step beyond."""
        limit = self.settings.output.energy_warning
        self.error_max = max(self.error_max, abs(error)) if math.isfinite(error) else self.error_max
        if not (limit and abs(error) > limit):          # NaN > limit is False
            return None
        self.warned = step if self.warned is None else self.warned
        return limit

    def timebins(self) -> list[dict[str, Any]]:
        """Block time steps: one row per time bin (:class:`hybridtree.integrate.schemes.BinStats`);
        empty for shared steps."""
        stats = getattr(self.stepper.scheme, "stats", None)
        return stats.rows() if stats is not None else []

    # -- snapshots ------------------------------------------------------------------------

    def _run_state(self, step: int) -> dict[str, Any]:
        # SnapshotNumber: the last scheduled snapshot written, so a continuation numbers
        # on from it whatever else (a restart point, a save) was written since
        return {"Step": step, "SnapshotNumber": self.number - 1, "InitialEnergy": self.e0,
                "Version": __version__, "Processes": self.comm.size, "Time": self.sched.time(step)}

    def _cosmo_header(self, step: int) -> dict[str, float] | None:
        """What a snapshot of a cosmological run needs for GADGET's convention (scale
        factor, h, Ω's); None for other runs."""
        if not self.sched.cosmological:
            return None
        c = self.settings.cosmology
        out = {"a": self.sched.a(step), "h": c.h, "omega_m": c.omega_m,
               "omega_lambda": c.omega_lambda}
        box = box_of(self.settings)
        if box is not None:         # the state is comoving already: x and p = a² dx/dt
            out["box"] = box
        return out

    def snapshot(self, step: int, wait: bool = False, restart: bool = False) -> None:
        """Collective: the next scheduled snapshot, or (``restart``) the restart point."""
        stem = RESTART_STEM if restart else Path(snapshot_name(self.number)).stem
        state = self._run_state(step)
        if not restart:
            state["SnapshotNumber"] = self.number
            self.number += 1
        streamed = chunks_of(self.stepper.state) if self.comm.size == 1 else None
        particles = self.stepper.particles() if streamed is None else streamed  # "transfer"
        comm, out, t, units = self.comm, self.folder, self.sched.time(step), self.units
        params, layout = self.settings.flat(), self.settings.output.snapshot_files
        cosmo, double = self._cosmo_header(step), restart or self.settings.output.double_precision

        def write() -> list[Path]:
            return write_run_snapshot(comm, out, stem, particles, t, units, params,
                                      state, layout, cosmology=cosmo, double=double)

        self.written = step
        with self.stepper.clock.host("output"):
            if self.writer is None or streamed is not None:
                if self.writer is not None:     # streamed: written before the state moves
                    self.writer.wait()
                self.made.extend(write())
            else:
                self.writer.submit(write)
                if wait:
                    self.writer.wait()
            if not restart and (self.settings.output.power_spectrum or self.settings.output.halos):
                self._power_spectrum(stem)
            if not restart and self.settings.output.gadget2:
                self._gadget2(stem)

    def _power_spectrum(self, stem: str) -> None:
        """Collective: P(k) and/or FOF halos of the snapshot ``stem`` just written, beside
        it (process 0 reads the whole set back, as `hybridtree pk` / `halos` would)."""
        from ..analysis.on_output import write_products
        if self.writer is not None:
            self.writer.wait()          # every part is in place once process 0's is
        error = None
        if self.comm.rank == 0:
            try:
                o = self.settings.output
                write_products(self.folder, stem, o.power_spectrum, o.halos,
                               self.settings.gravity.device)
            except (OSError, HybridtreeError) as exc:
                error = f"output.power_spectrum / output.halos: {exc}"
        agree(self.comm, error, SnapshotWriteError)

    def _gadget2(self, stem: str) -> None:
        """Collective: the snapshot ``stem`` just written again as ``STEM.gadget2`` beside
        it, one GADGET-2 binary file (:func:`hybridtree.io.gadget2_write.hdf5_to_gadget2`;
        process 0 reads the whole set back)."""
        from ..io.gadget2_write import hdf5_to_gadget2
        if self.writer is not None:
            self.writer.wait()
        error = None
        if self.comm.rank == 0:
            final = self.folder / f"{stem}.gadget2"
            tmp = atomic_path(final)                # complete or not at all
            try:
                hdf5_to_gadget2(resolve_snapshot(self.folder / stem), tmp)
                tmp.replace(final)
            except (OSError, SnapshotError) as exc:
                tmp.unlink(missing_ok=True)
                error = f"output.gadget2: {exc}"
        agree(self.comm, error, SnapshotWriteError)

    def save(self, path: Path, step: int) -> None:
        """Collective: the current state as one snapshot file ``path`` (gathered on
        process 0), its stored settings those of a valid run ending now."""
        flat = self.settings.flat()
        flat["output.dir"] = str(path.parent)
        dt, t = self.settings.time.dt, self.sched.time(step)
        if (not self.sched.cosmological and flat["time.t_end"] < t
                and abs(round(t / dt) * dt - t) <= 1e-9 * max(t, dt)):
            flat["time.t_end"] = t     # so the stored settings describe a valid run
        write_run_snapshot(self.comm, path.parent, path.name[:-len(".hdf5")],
                           self.stepper.particles(), t, self.units, flat,
                           self._run_state(step), "single", cosmology=self._cosmo_header(step))

    def check_writes(self) -> None:
        """Raise the error of a background write that failed."""
        if self.writer is not None:
            self.writer.check()

    def wait_writes(self) -> None:
        """Let the background write finish (timed as output); raise its error."""
        if self.writer is not None:
            with self.stepper.clock.host("output"):
                self.writer.wait()

    def finish_writes(self) -> None:
        """Let a background snapshot write finish (its error, if any, is reported by the
        exception already on its way)."""
        if self.writer is None:
            return
        try:
            self.writer.wait()
        except OSError:
            pass

    def stop_point(self, step: int, name: str, wrote: bool) -> str:
        """A signal stopped the run after ``step``: the restart point (unless the step's
        snapshot was just written), the log line; returns how to continue."""
        if self.settings.output.snapshot_on_signal and not wrote:
            self.snapshot(step, restart=True)
        if self.writer is not None:      # the restart point must exist before we say so
            self.writer.wait()
        then = f"continue with: hybridtree run --restart {self.folder}"
        self.reporter.message(f"{name} at step {step}: stopped after the step; {then}")
        return then

    # -- the end --------------------------------------------------------------------------

    def close(self, step: int, steps: int, wall: float, broken: bool) -> None:
        """Finish (collective): with a folder, the last state is written as the next
        snapshot unless one was just written, and the run log gets its end line (under
        MPI: interactions summed over the processes, phase seconds their mean).
        ``steps``: taken since the start; ``broken``: the state cannot be written."""
        try:
            # a signal now waits for the last snapshot (as during the steps)
            with Signals():
                if self.folder is not None and not broken and self.written != step:
                    self.snapshot(step)
                if self.writer is not None:
                    self.writer.wait()
            if broken:
                return
            self._end_line(steps, wall)
        finally:
            self._close_tables()
            self.reporter.close()

    def _end_line(self, steps: int, wall: float) -> None:
        sec = self.stepper.clock.snapshot()
        seconds = np.array([sec.get(k, 0.0) for k in PHASES])
        interactions = self.stepper.counts.get("interactions", 0)
        size = self.comm.size
        if size > 1:        # collective: the sum of the interactions, the mean seconds
            tot = self.comm.allreduce(np.append(seconds, float(interactions)))
            seconds, interactions = tot[:-1] / size, int(round(tot[-1]))
        extra = run_fields(self.stepper.engine.rt.memory,        # device buffers' peak
                           int(self.stepper.type_counts().sum()), self.comm.allgather)
        if self.writer is not None:
            extra.update(snapshots_in_background=self.writer.writes,
                         background_write_s=round(self.writer.seconds, 3))
        if self.warned is not None:     # said again where a reader of the log looks last
            extra.update(energy_error_max=float(f"{self.error_max:.3g}"), energy_warning=
                         self.settings.output.energy_warning, energy_warning_step=self.warned)
        self.reporter.event(
            "end", steps=steps, wall_s=round(wall, 3),
            **{f"{k}_s": round(float(v), 3) for k, v in zip(PHASES, seconds)},
            interactions=interactions, **extra)
