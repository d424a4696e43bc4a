"""The writing side of a run (:class:`hybridtree.run.simulation.Simulation` inherits it):
diagnostics rows, scheduled snapshots and restart points, ``save``, ``close`` and the
``with`` block.  It works on the simulation's own fields (stepper, communicator, output
folder, background writer); units internal (G = 1)."""

from __future__ import annotations

import time
from pathlib import Path
from typing import Any

import numpy as np

from hybridtree import __version__
from ..analysis.diagnostics import breakdown_record, measure, write_timebins
from .guards import Signals
from ..integrate.quantities import with_lambda_potential
from ..io.snapshot import snapshot_name
from ..parallel.snapshots import write_run_snapshot
from .folder import RESTART_STEM

__all__ = ["RunWriting"]


class RunWriting:
    """Diagnostics and snapshots of a simulation (a mixin of
    :class:`hybridtree.run.simulation.Simulation`, which sets the fields it uses)."""

    def _counters(self) -> dict[str, Any]:
        return {"seconds": self._stepper.clock.snapshot(), "counts": dict(self._stepper.counts),
                "step": self._step, "wall": time.perf_counter()}

    def _report(self) -> None:
        """A diagnostics row (collective): kept, written to diagnostics.csv, printed."""
        mom = self._moments()
        radii = self._stepper.lagrangian_radii(mom["com"], mom["mass"])
        now, now_bd = self._counters(), self._stepper.breakdown()
        rec = measure(self._step, self.t, mom, radii, self._e0, now, self._prev, self._comm)
        rec.update(breakdown_record(self._comm, now_bd, self._prev_bd))
        rec["a"] = self._sched.a(self._step)
        if self._lambda and rec["potential"]:
            # an expanding sphere's energy is nearly 0 (exactly 0 for a flat, homogeneous
            # one): its change is measured against |W| instead
            rec["rel_energy_error"] = (rec["total"] - self._e0) / abs(rec["potential"])
        self._prev, self._prev_bd = now, now_bd
        self._records.append(rec)
        with self._stepper.clock.host("output"):
            if self._diag is not None:
                self._diag.write(rec)
                bins = self.timebins()
                if bins:
                    write_timebins(self._diag.path.with_name("timebins.csv"), bins)
            self._reporter.report(rec)

    def timebins(self) -> list[dict[str, Any]]:
        """Block time steps: one row per time bin (:class:`hybridtree.integrate.schemes.BinStats`:
        its particles at the start of the last step, and the substeps, wall seconds,
        interactions and forces charged to it); empty for shared steps."""
        stats = getattr(self._stepper.scheme, "stats", None)
        return stats.rows() if stats is not None else []

    def _run_state(self) -> dict[str, Any]:
        # SnapshotNumber: the last scheduled snapshot written, so a continuation numbers
        # on from it whatever else (a restart point, a save) was written since
        return {"Step": self._step, "SnapshotNumber": self._number - 1,
                "InitialEnergy": self._e0, "Version": __version__,
                "Processes": self._comm.size, "Time": self.t}

    def _cosmo_header(self) -> dict[str, float] | None:
        """What a snapshot of a cosmological run needs for GADGET's convention (scale
        factor, h, Ω's); None for other runs."""
        if not self._sched.cosmological:
            return None
        c = self.settings.cosmology
        return {"a": self.a, "h": c.h, "omega_m": c.omega_m, "omega_lambda": c.omega_lambda}

    def _soften(self, step: int) -> None:
        """The stepper's softening for the forces at ``step``, where the schedule
        rescales it (a cosmological run's comoving gravity.eps)."""
        eps = self._sched.softening(step, self.settings.gravity.eps)
        if eps is not None:
            self._stepper.set_softening(eps)

    def _moments(self) -> dict:
        """The stepper's sums, with the Λ term's potential energy -½ λ Σ m r² added to
        the potential (a cosmological run's energy is then conserved)."""
        return with_lambda_potential(self._stepper.moments(), self._lambda)

    def _snapshot(self, wait: bool = False, restart: bool = False) -> None:
        """Collective: the next scheduled snapshot, or (``restart``) the restart point."""
        stem = RESTART_STEM if restart else Path(snapshot_name(self._number)).stem
        state = self._run_state()
        if not restart:
            state["SnapshotNumber"] = self._number
            self._number += 1
        particles = self._stepper.particles()              # timed as "transfer"
        comm, out, t = self._comm, self._out, self.t
        params, layout = self.settings.flat(), self.settings.output.snapshot_files
        cosmo = self._cosmo_header()

        def write() -> list[Path]:
            return write_run_snapshot(comm, out, stem, particles, t, self.units, params,
                                      state, layout, cosmology=cosmo)

        self._written = self._step
        with self._stepper.clock.host("output"):
            if self._writer is None:
                self._made.extend(write())
            else:
                self._writer.submit(write)
                if wait:
                    self._writer.wait()

    def save(self, path: str | Path) -> Path:
        """Collective: write the current state as one snapshot file ``path`` (all
        processes' particles, gathered on process 0) that ``hybridtree run --restart
        PATH --set time.t_end=T`` or :meth:`from_snapshot` continues; returns the path."""
        self._check_open()
        path = Path(path)
        if path.suffix != ".hdf5":
            raise ValueError(f"save({str(path)!r}): the name must end in .hdf5")
        if not path.parent.is_dir():
            raise FileNotFoundError(f"save({str(path)!r}): folder {str(path.parent)!r} "
                                    f"does not exist")
        flat = self.settings.flat()
        flat["output.dir"] = str(path.parent)
        dt = self.settings.time.dt
        if (not self._sched.cosmological and flat["time.t_end"] < self.t
                and abs(round(self.t / dt) * dt - self.t) <= 1e-9 * max(self.t, dt)):
            flat["time.t_end"] = self.t     # so the stored settings describe a valid run
        write_run_snapshot(self._comm, path.parent, path.name[:-len(".hdf5")],
                           self._stepper.particles(), self.t, self.units, flat,
                           self._run_state(), "single", cosmology=self._cosmo_header())
        return path

    def close(self) -> None:
        """Finish the run (collective): with an output folder, the last state is written as
        the next snapshot unless one was just written, and the run log gets its end line
        (under MPI: interactions summed over the processes, phase seconds their mean)."""
        if self._ended:
            return
        self._ended = True
        try:
            # a signal now waits for the last snapshot (as during the steps)
            with Signals():
                if self._out is not None and self._broken is None:
                    if self._written != self._step:
                        self._snapshot()
                if self._writer is not None:
                    self._writer.wait()
            if self._broken is not None:
                return
            sec = self._stepper.clock.snapshot()
            phases = ("build", "walk", "transfer", "integrate", "reduce", "output")
            seconds = np.array([sec.get(k, 0.0) for k in phases])
            interactions = self._stepper.counts.get("interactions", 0)
            size = self._comm.size
            if size > 1:        # collective: the sum of the interactions, the mean seconds
                tot = self._comm.allreduce(np.append(seconds, float(interactions)))
                seconds, interactions = tot[:-1] / size, int(round(tot[-1]))
            self._reporter.event(
                "end", steps=self._step - self._step0, wall_s=round(self._wall, 3),
                **{f"{k}_s": round(float(v), 3) for k, v in zip(phases, seconds)},
                interactions=interactions,
                **({"snapshots_in_background": self._writer.writes,
                    "background_write_s": round(self._writer.seconds, 3)}
                   if self._writer is not None else {}))
        finally:
            if self._diag is not None:
                self._diag.close()
            self._reporter.close()

    def __enter__(self) -> Any:
        return self

    def __exit__(self, kind: Any, *exc: Any) -> None:
        if kind is None:
            self.close()
        else:       # an error: nothing more is written, what was written stays
            self._ended = True
            if self._diag is not None:
                self._diag.close()
            self._reporter.close()

    def _check_open(self) -> None:
        if self._ended:
            raise RuntimeError("this Simulation is closed")
        if self._broken is not None:
            raise RuntimeError(f"this Simulation cannot go on: {self._broken}; start again "
                               f"from its last snapshot or save")

    def _finish_writes(self) -> None:
        """Let a background snapshot write finish (its error, if any, is reported by the
        exception already on its way)."""
        if self._writer is None:
            return
        try:
            self._writer.wait()
        except OSError:
            pass
