"""The particles a new run starts from: generated, read from a file (checked against the
run's cosmology), or the API caller's arrays; and the checks every run's particles pass.

Everything here happens before the first force; user mistakes are :class:`RunError`
(re-exported here from :mod:`hybridtree.run.processes`), raised on every process together
under MPI.  The rest of a run's setting up: :mod:`hybridtree.run.options` (what the
settings say), :mod:`hybridtree.run.assemble` (stepper and schedule),
:mod:`hybridtree.run.restart` (a continued run), :mod:`hybridtree.run.size` (memory).
Units: internal (G = 1) unless a docstring says otherwise.
"""

from __future__ import annotations

import math
from typing import Any

import numpy as np

from ..ics import spheres as ics
from ..ics.cosmo_box import BoxRows, box_rows, cosmo_box_share
from ..ics.rows import ModelRows, model_rows
from ..config.settings import Settings
from ..config.units import KPC_CM, MSUN_1E10_G, Units
from ..io.snapshot import SnapshotError, file_cosmology
from ..parallel.comm import Comm
from ..parallel.snapshots import agree, read_particles_share
from ..particles import N_TYPES, Particles, validate_particles
from .options import background_of
from .processes import RunError

__all__ = ["COSMOLOGICAL_KINDS", "DRAWN_KINDS", "RunError", "box_file", "drawn_rows",
           "drawn_time", "draws_into_state", "initial_conditions",
           "check_particles", "particles_from_arrays", "check_file_cosmology", "check_end"]

#: the initial conditions a cosmological run starts from (a "file" must be cosmological:
#: :func:`check_file_cosmology`); the others are isolated systems
COSMOLOGICAL_KINDS = ("cosmo_sphere", "cosmo_box", "box_file", "file")

#: the generated models a run of one process draws block by block into its state
#: (:func:`drawn_rows`) instead of holding them whole on the host first
DRAWN_KINDS = ("plummer", "hernquist", "cold_sphere")


def draws_into_state(settings: Settings, size: int) -> bool:
    """Whether a new run of ``settings`` on ``size`` processes takes its initial conditions
    as :func:`drawn_rows` (drawn into the state where it is on the device): a generated
    sphere, or a periodic box's grid (ics.kind = "cosmo_box"), on one process."""
    if size != 1:
        return False
    kind = settings.ics.kind
    return ((kind in DRAWN_KINDS and not settings.cosmology.enabled)
            or (kind == "cosmo_box" and settings.cosmology.enabled))


def drawn_rows(settings: Settings, comm: Comm | None = None) -> ModelRows | BoxRows | None:
    """The initial conditions of a run of one process as :class:`hybridtree.ics.rows.
    ModelRows` (drawn when the state takes them: block by block into a device state),
    where they are a generated sphere (:data:`DRAWN_KINDS`), or as :class:`hybridtree.ics.
    cosmo_box.BoxRows` (the fields computed, then the particles made a few planes at a
    time into the state) for a periodic box at cosmology.z_start; None for every other run
    (:func:`initial_conditions` makes those).  The particles are the bits
    :func:`initial_conditions` gives, and pass its checks (RunError)."""
    comm = comm or Comm(None)
    c = settings.ics
    if not draws_into_state(settings, comm.size):
        return None
    what = f"initial conditions ({c.kind})"

    def check(p: Particles) -> None:
        try:
            validate_particles(p.pos, p.mass)
            validate_particles(p.vel, p.mass, "velocities")
        except ValueError as exc:
            raise RunError(f"{what}: {exc}") from None

    if c.kind == "cosmo_box":
        a0 = 1.0 / (1.0 + settings.cosmology.z_start)
        return box_rows(c.n_grid, c.box, a0, background_of(settings), c.seed, c.lpt, check,
                        settings.memory.ics_fields)
    params = {"radius": c.radius} if c.kind == "cold_sphere" else {"r_max": c.r_max}
    return model_rows(c.kind, c.n, c.seed, check, **params)


def drawn_time(settings: Settings) -> float:
    """The start time (internal units) of the initial conditions :func:`drawn_rows`
    gives: 0 for a generated sphere, the age at cosmology.z_start for a periodic box."""
    if settings.ics.kind != "cosmo_box":
        return 0.0
    a0 = 1.0 / (1.0 + settings.cosmology.z_start)
    return float(background_of(settings).t_of_a(a0))


def initial_conditions(settings: Settings, units: Units, comm: Comm | None = None
                       ) -> tuple[Particles, float]:
    """Particles (internal units, centre of mass at rest at the origin) and start time;
    with several processes, this process's share: particles (IDs) N·r/K + 1 .. N·(r+1)/K
    of a generated model, or an equal slice of a file's particles.

    A generated model is the same bits for any number of processes K: each process
    draws only the blocks of IDs its share touches (:func:`hybridtree.ics.generate_share`)
    and the centre of mass comes from exact sums of every block's moments."""
    comm = comm or Comm(None)
    c = settings.ics
    t0 = 0.0
    if c.kind == "file":
        try:
            p, t0, _ = read_particles_share(comm, c.file, c.types, units)
        except SnapshotError as exc:
            raise RunError(f"initial conditions: {exc}") from None
        check_particles(p, f"initial conditions ({c.file})", comm)
        start = check_file_cosmology(settings, c.file, t0, "initial conditions")
        if settings.cosmology.enabled:
            # the origin is the centre of the Hubble flow: no shift; the run's schedule
            # starts at z_start, which must be the file's
            return p, start
        if comm.size == 1:
            p.pos, p.vel = ics.to_com_frame(p.pos, p.vel, p.mass)
        else:
            tot = comm.allreduce(np.concatenate([[p.mass.sum()], p.mass @ p.pos,
                                                 p.mass @ p.vel]))
            p.pos, p.vel = p.pos - tot[1:4] / tot[0], p.vel - tot[4:7] / tot[0]
        return p, t0
    if c.kind == "cosmo_sphere":
        return _cosmo_sphere(settings, comm)
    if settings.cosmology.enabled and c.kind not in COSMOLOGICAL_KINDS:
        raise RunError(f"cosmology.enabled = true needs cosmological initial conditions, but "
                       f"ics.kind = '{c.kind}' is an isolated system, which would run as if it "
                       f"were an expanding universe from z = {settings.cosmology.z_start:g}: "
                       f"use ics.kind = 'cosmo_sphere', 'cosmo_box', 'box_file' or 'file' (a "
                       f"cosmological snapshot), or leave cosmology.enabled = false")
    if c.kind == "cosmo_box":
        return _cosmo_box(settings, comm)
    if c.kind == "galaxy":
        return _galaxy(settings, units, comm), t0
    params = {"radius": c.radius} if c.kind == "cold_sphere" else {"r_max": c.r_max}
    lo, hi = c.n * comm.rank // comm.size, c.n * (comm.rank + 1) // comm.size
    share = ics.generate_share(c.kind, c.n, lo, hi, c.seed, **params)
    # one process takes this same path, so K = 1 gives the bits K = 2, 3, ... give; the
    # exact partial sums keep the traffic O(K) however many blocks there are
    x_cm, v_cm = ics.com_offsets(comm.allgather(ics.exact_column_sums(share.sums)))
    share.pos -= x_cm
    share.vel -= v_cm
    p = Particles(share.pos, share.vel, share.mass, share.ids)
    check_particles(p, f"initial conditions ({c.kind})", comm)
    return p, t0


def check_file_cosmology(settings: Settings, path: str, t0: float, what: str) -> float:
    """The start time of a run from the particles of file ``path`` (read at time ``t0``,
    internal units); RunError where the file and the run disagree: a cosmological file
    (comoving coordinates) needs a cosmological run of its cosmology starting at its
    redshift, and a cosmological run from any other file must start at the file's time."""
    try:
        cosmic = file_cosmology(path)
    except SnapshotError as exc:
        raise RunError(f"{what}: {exc}") from None
    c = settings.cosmology
    if cosmic is None:
        if c.enabled:
            _check_start(settings, t0, f"{what} ({path})")
        return t0
    z = 1.0 / cosmic.a - 1.0
    stated = (f"Omega0 = {cosmic.omega_m:.6g}, OmegaLambda = {cosmic.omega_lambda:.6g}, "
              f"HubbleParam = {cosmic.h:.6g}")
    if not c.enabled:
        raise RunError(
            f"{what} ({path}) are a cosmological snapshot (comoving coordinates at a = "
            f"{cosmic.a:.6g}, z = {z:.6g}; {stated}): start a cosmological run from it, with "
            f"cosmology.enabled = true, cosmology.z_start = {z:.6g}, cosmology.omega_m = "
            f"{cosmic.omega_m:.6g}, cosmology.omega_lambda = {cosmic.omega_lambda:.6g}, "
            f"cosmology.h = {cosmic.h:.6g}")
    run = {"omega_m": (c.omega_m, cosmic.omega_m), "omega_lambda": (c.omega_lambda,
                                                                     cosmic.omega_lambda),
           "h": (c.h, cosmic.h)}
    differ = [k for k, (mine, theirs) in run.items() if abs(mine - theirs) > 1e-6 * abs(theirs)]
    if differ:
        raise RunError(f"{what} ({path}) are of a cosmology with {stated}, but the run's has "
                       + ", ".join(f"cosmology.{k} = {run[k][0]:.6g}" for k in differ)
                       + ": set them to the file's")
    a0 = 1.0 / (1.0 + c.z_start)
    if abs(cosmic.a - a0) > 1e-6 * a0:
        raise RunError(f"{what} ({path}) are at z = {z:.6g}, but cosmology.z_start is "
                       f"{c.z_start}")
    return float(background_of(settings).t_of_a(a0))


def _check_start(settings: Settings, t0: float, what: str) -> None:
    """RunError unless particles of a file without a scale factor (physical coordinates),
    at time ``t0``, are at the age of cosmology.z_start: only then are they the start of
    a cosmological run rather than an isolated system."""
    bg = background_of(settings)
    z = settings.cosmology.z_start
    t_start = float(bg.t_of_a(1.0 / (1.0 + z)))
    if abs(t0 - t_start) > 1e-6 * t_start:
        at = (f"at z = {1.0 / float(bg.a_of_t(t0)) - 1.0:.6g} (t = {t0:.6g})"
              if 0 < t0 < float(bg.t_of_a(1.0)) and math.isfinite(t0) else f"at t = {t0:.6g}")
        raise RunError(f"{what} are not a cosmological snapshot (no scale factor) and are {at}, "
                       f"but cosmology.z_start = {z:g} is at t = {t_start:.6g}: a cosmological "
                       f"run (cosmology.enabled = true) starts from cosmological initial "
                       f"conditions (a snapshot of a cosmological run or of cosmological ICs, "
                       f"ics.kind = 'cosmo_sphere', 'cosmo_box' or 'box_file'); for an "
                       f"isolated system leave cosmology.enabled = false")


def _galaxy(settings: Settings, units: Units, comm: Comm) -> Particles:
    """This process's share of the disk galaxy ics.model of ics.n particles
    (:mod:`hybridtree.ics.galaxy`: kpc, 1e10 Msun, G = 1), in the run's units, centre of
    mass at rest at the origin; the same bits for any number of processes."""
    from ..ics.galaxy import galaxy_params, galaxy_share
    c = settings.ics
    params = galaxy_params({"model": c.model, "n": c.n})
    lo, hi = c.n * comm.rank // comm.size, c.n * (comm.rank + 1) // comm.size
    share = galaxy_share(params, lo, hi, c.seed)
    x_cm, v_cm = ics.com_offsets(comm.allgather(ics.exact_column_sums(share.sums)))
    model = Units(KPC_CM, MSUN_1E10_G)          # the models' units
    length, mass = model.length_cm / units.length_cm, model.mass_g / units.mass_g
    velocity = model.velocity_cm_per_s / units.velocity_cm_per_s
    p = Particles((share.pos - x_cm) * length, (share.vel - v_cm) * velocity,
                  share.mass * mass, share.ids, types=share.types)
    check_particles(p, f"initial conditions (galaxy {c.model})", comm)
    return p


def _cosmo_sphere(settings: Settings, comm: Comm) -> tuple[Particles, float]:
    """This process's share of a cosmological sphere (:mod:`hybridtree.ics.cosmological`) at
    cosmology.z_start, in physical coordinates, and the age then (internal units).  Not
    moved to a centre-of-mass frame: the cube's centre is the origin of the Hubble flow."""
    from ..ics.cosmological import cosmo_sphere_share, sphere_count
    c, bg = settings.ics, background_of(settings)
    count = sphere_count(c.n_grid, c.box, c.radius)
    lo, hi = count * comm.rank // comm.size, count * (comm.rank + 1) // comm.size
    a0 = 1.0 / (1.0 + settings.cosmology.z_start)
    pos, vel, mass, ids = cosmo_sphere_share(c.n_grid, c.box, c.radius, a0, bg, c.seed,
                                             lo, hi, order=c.lpt,
                                             fields=settings.memory.ics_fields)
    p = Particles(pos, vel, mass, ids)
    check_particles(p, "initial conditions (cosmo_sphere)", comm)
    return p, float(bg.t_of_a(a0))


def _cosmo_box(settings: Settings, comm: Comm) -> tuple[Particles, float]:
    """This process's share of a periodic cosmological box (:mod:`hybridtree.ics.cosmo_box`)
    at cosmology.z_start: comoving positions in [0, ics.box), canonical momenta
    p = a² dx/dt as velocities; and the age then (internal units)."""
    c, bg = settings.ics, background_of(settings)
    count = c.n_grid ** 3
    lo, hi = count * comm.rank // comm.size, count * (comm.rank + 1) // comm.size
    a0 = 1.0 / (1.0 + settings.cosmology.z_start)
    pos, mom, mass, ids = cosmo_box_share(c.n_grid, c.box, a0, bg, c.seed, lo, hi, order=c.lpt,
                                          fields=settings.memory.ics_fields)
    p = Particles(pos, mom, mass, ids)
    check_particles(p, "initial conditions (cosmo_box)", comm)
    return p, float(bg.t_of_a(a0))


def box_file(settings: Settings, units: Units) -> tuple[Particles, float, float]:
    """A periodic box's initial conditions from ics.file (:func:`hybridtree.io.box_ics.
    read_box_ics`): comoving positions, canonical momenta p = a v_pec as velocities, the
    age at the file's a, and the box's comoving side (internal units).  RunError where
    the file and the run's cosmology disagree (Ω's, h, a and cosmology.z_start)."""
    from ..io.box_ics import read_box_ics
    c = settings.ics
    try:
        ics = read_box_ics(c.file, units, length_unit_cm=c.file_length_cm or None)
    except SnapshotError as exc:
        raise RunError(f"initial conditions: {exc}") from None
    cosmo, what = settings.cosmology, f"initial conditions ({c.file})"
    stated = {"omega_m": ics.omega_m, "omega_lambda": ics.omega_lambda, "h": ics.h}
    differ = [k for k, v in stated.items()
              if v is not None and abs(getattr(cosmo, k) - v) > 1e-6 * abs(v)]
    if differ:
        raise RunError(f"{what} state " + ", ".join(f"{k} = {stated[k]:.6g}" for k in differ)
                       + ", but the run has " + ", ".join(f"cosmology.{k} = "
                                                          f"{getattr(cosmo, k):.6g}" for k in differ)
                       + ": set them to the file's")
    a0 = 1.0 / (1.0 + cosmo.z_start)
    if abs(ics.a - a0) > 1e-6 * a0:
        raise RunError(f"{what} are at z = {1 / ics.a - 1:.6g}, but cosmology.z_start is "
                       f"{cosmo.z_start}: set it to the file's")
    p = Particles(ics.pos, ics.vel * ics.a, ics.mass, ics.ids, types=ics.types)
    check_particles(p, what)
    return p, float(background_of(settings).t_of_a(a0)), ics.box


def check_particles(p: Particles, what: str, comm: Comm | None = None) -> None:
    """RunError (on every process) for no particles, bad values, or zero total mass."""
    comm = comm or Comm(None)
    error = None
    try:
        validate_particles(p.pos, p.mass)
        validate_particles(p.vel, p.mass, "velocities")
    except ValueError as exc:
        error = f"{what}: {exc}"
    agree(comm, error, RunError)
    count, total = comm.allreduce(np.array([len(p), p.mass.sum()]))
    if count == 0:
        raise RunError(f"{what}: no particles")
    if total <= 0:
        raise RunError(f"{what}: total mass is zero")


def particles_from_arrays(pos: Any, vel: Any, mass: Any, ids: Any, types: Any = None
                          ) -> Particles:
    """Checked float64 copies of the caller's arrays (RunError naming the problem: for
    arrays of different lengths, each one's length)."""
    arrays = {}
    for name, a in (("pos", pos), ("vel", vel), ("mass", mass)):
        a = np.asarray(a)
        if np.iscomplexobj(a) or a.dtype.kind not in "fiu":
            raise RunError(f"Simulation: {name} must be real numbers, got dtype {a.dtype}")
        arrays[name] = np.array(a, dtype=np.float64)
    for name in ("pos", "vel"):
        if arrays[name].ndim != 2 or arrays[name].shape[1] != 3:
            raise RunError(f"Simulation: {name} has shape {arrays[name].shape}, expected "
                           f"(N, 3)")
    if arrays["mass"].ndim != 1:
        raise RunError(f"Simulation: mass has shape {arrays['mass'].shape}, expected (N,): "
                       f"one mass per particle")
    n = len(arrays["pos"])
    if len(arrays["vel"]) != n:
        raise RunError(f"Simulation: vel has shape {arrays['vel'].shape} but pos has shape "
                       f"{arrays['pos'].shape}: one velocity per particle")
    if len(arrays["mass"]) != n:
        raise RunError(f"Simulation: mass has {len(arrays['mass'])} entries but pos has {n} "
                       f"rows: one mass per particle")
    ids = np.arange(1, n + 1, dtype=np.uint64) if ids is None else _ids(ids, n)
    if types is not None:
        types = _per_particle("types", types, n)
        if types.dtype.kind not in "iu":
            raise RunError(f"Simulation: types must be integers 0 .. {N_TYPES - 1} "
                           f"(GADGET's PartType0 .. PartType5), got dtype {types.dtype}")
    try:
        return Particles(arrays["pos"], arrays["vel"], arrays["mass"], ids, types=types)
    except ValueError as exc:           # types out of range
        raise RunError(f"Simulation: {exc}") from None


def _per_particle(name: str, a: Any, n: int) -> np.ndarray:
    """``a`` as an array of one entry per particle (RunError naming both lengths)."""
    a = np.asarray(a)
    if a.shape != (n,):
        raise RunError(f"Simulation: {name} has "
                       + (f"{len(a)} entries" if a.ndim == 1 else f"shape {a.shape}")
                       + f" but pos has {n} rows: one entry per particle")
    return a


def _ids(ids: Any, n: int) -> np.ndarray:
    """The caller's IDs as uint64 (RunError unless n unique integers >= 0)."""
    ids = _per_particle("ids", ids, n)
    if ids.dtype.kind not in "iu" or (ids.dtype.kind == "i" and (ids < 0).any()):
        raise RunError(f"Simulation: ids must be integers >= 0, got "
                       + (f"dtype {ids.dtype}" if ids.dtype.kind not in "iu" else
                          f"ids[{int(np.flatnonzero(ids < 0)[0])}] = "
                          f"{int(ids[ids < 0][0])}"))
    ids = ids.astype(np.uint64)
    if not ids_unique(ids):
        raise RunError("Simulation: ids must be unique")
    return ids


#: rows marked at a time by :func:`ids_unique` (its temporaries: 8 bytes per row of one)
ID_ROWS = 1 << 24


def ids_unique(ids: np.ndarray, rows: int = ID_ROWS) -> bool:
    """Whether the uint64 ``ids`` are all different.  IDs that fill at most four slots per
    particle between their least and largest (a range, as almost every run has) are
    marked in a byte per slot, ``rows`` at a time: O(N), 2^22 IDs in about 0.02 s, where
    numpy's ``unique`` took 3.6 s on the H200 machine's host (numpy 2's hash table; it
    was 90 % of a 2^22 ``Simulation()``); other IDs are sorted (8 bytes per ID)."""
    n = len(ids)
    if n < 2:
        return True
    lo, hi = int(ids.min()), int(ids.max())
    if hi - lo >= 4 * n:
        s = np.sort(ids)
        return not bool((s[1:] == s[:-1]).any())
    seen = np.zeros(hi - lo + 1, np.bool_)
    for a in range(0, n, rows):
        seen[ids[a:a + rows] - np.uint64(lo)] = True
    # n marks land in n different slots exactly when no two IDs are equal
    return int(np.count_nonzero(seen)) == n


def check_end(settings: Settings, t0: float) -> None:
    """RunError when ``time.t_end`` is before the start time ``t0`` or not a whole number
    of steps after it (a cosmological run's steps run from z_start to z_end: nothing to
    check here)."""
    if settings.cosmology.enabled:
        return
    dt, t_end = settings.time.dt, settings.time.t_end
    n_left = round((t_end - t0) / dt)
    if t_end < t0 - 1e-9 * max(abs(t0), dt):
        raise RunError(f"time.t_end = {t_end:.10g} is before the start time t = {t0:.10g} "
                       f"(the time of the initial conditions or of the snapshot continued): "
                       f"a run only steps forward; set time.t_end after {t0:.10g}")
    if abs(t0 + n_left * dt - t_end) > 1e-9 * max(abs(t_end), dt):
        raise RunError(f"time.t_end = {t_end} is not a whole number of steps (dt = {dt}) "
                       f"after the start time {t0}")
