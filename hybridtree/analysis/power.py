"""The matter power spectrum P(k) of a periodic box (:func:`power_spectrum`) and of a
periodic GADGET-style snapshot (:func:`snapshot_power`, ``hybridtree pk``).

The estimator is the standard one (GADGET-4's on-the-fly P(k), nbodykit's, Pylians'):

1. assign the particles' masses to an ``n_mesh``³ mesh of spacing H = L / n_mesh with
   periodic wrap, by cloud-in-cell (``order`` 2) or triangular-shaped-cloud (3); mesh point
   j sits at x_j = j H, and ρ̄ = Σm / L³, so the mesh holds δ_j = ρ_j / ρ̄ − 1;
2. δ^DFT(k) = Σ_j δ_j exp(−i k·x_j) (``rfftn``; k = 2π/L · integer vector);
3. divide by the assignment's window W(k) = Π_i sinc(k_i H / 2)^order (sinc x = sin x / x);
4. interlacing (Sefusatti et al. 2016, MNRAS 460, 3624): a second mesh from the particles
   moved by s = (H/2, H/2, H/2) holds δ^DFT(k) exp(−i k·s) for the true field but its
   images k + 2k_N n with the opposite sign for odd n_x + n_y + n_z; so
   ½ [δ1(k) + δ2(k) exp(+i k·s)] cancels the odd aliases (the strongest ones);
5. P(k) = V |δ^DFT(k)|² / n_mesh⁶: with the Fourier coefficients δ_k = δ^DFT / n_mesh³ of
   δ(x) = Σ_k δ_k exp(i k·x), P(k) = V ⟨|δ_k|²⟩, in length³ -- a plane wave
   δ = A cos(k0·x) has P = V A²/4 at ±k0; a Poisson sample of N equal masses has
   P = V/N (shot noise), V Σm² / (Σm)² for unequal masses, which is subtracted when asked;
6. averaged over spherical shells: edges k_f/2 + i Δk (k_f = 2π/L), by default Δk = k_f
   and the last shell centred on the Nyquist k_N = π n_mesh / L, so that the shells are
   centred on k_f, 2 k_f, ...; k = 0 is left out, empty shells are dropped.  ``modes``
   counts the wave vectors of the full grid in a shell, k and −k both (the rfft half
   counts twice except its k_z = 0 and k_z = k_N planes): the shell's estimate has a
   relative cosmic-variance (or shot-noise) error sqrt(2 / modes) for a Gaussian field.

Float64 throughout; the mass assignment is the periodic mesh's
(:func:`hybridtree.gravity.pm.assign_mass`: ``np.bincount``, a deterministic sum, over
chunks of particles), so memory is a few mesh-sized arrays (a 256³ mesh: ~0.15 GB each)
plus O(chunk) temporaries.
"""

from __future__ import annotations

import os
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import h5py
import numpy as np

from ..gravity.pm import assign_mass
from .power_compact import compact_power_sums, prefer_compact
from .power_device import AxisTables, device_shell_sums, slab_shell_sums, usable
from ..io.hdf5_files import N_TYPES, SnapshotError, attr_number, open_file, snapshot_files

__all__ = ["MPC_CM", "PeriodicParticles", "PowerSpectrum", "default_mesh", "power_spectrum",
           "power_table", "read_periodic", "snapshot_power"]

#: 1 Mpc in cm, as GADGET's units count it (UnitLength_in_cm = 3.085678e21 is "1 kpc/h")
MPC_CM = 3.085678e24
#: GADGET's default length unit, kpc (per h for comoving coordinates), in cm
GADGET_LENGTH_CM = 3.085678e21
@dataclass(frozen=True)
class PowerSpectrum:
    """A binned power spectrum: ``k`` the mean |k| of each shell's modes (2π / length),
    ``power`` P(k) (length³; shot noise subtracted if it was asked for), ``modes`` the
    wave vectors in each shell (k and −k both counted), ``shot_noise`` V Σm² / (Σm)²
    (length³), ``box`` (length), ``n_mesh``, ``n_particles``."""
    k: np.ndarray
    power: np.ndarray
    modes: np.ndarray
    shot_noise: float
    box: float
    n_mesh: int
    n_particles: int


def default_mesh(n_particles: int, cap: int = 512) -> int:
    """The smallest power of two ≥ 2 N^(1/3) (the mesh's Nyquist twice the mean particle
    separation's), at least 8 and at most ``cap`` (512: ~1 GB per mesh-sized array)."""
    n = 8
    while n < cap and n ** 3 < 8 * n_particles:     # n ≥ 2 N^(1/3) without rounding
        n *= 2
    return min(n, cap)


def _fft(mesh: np.ndarray) -> np.ndarray:
    # scipy's: in place of the mesh and on every core (numpy's would copy, on one);
    # imported here, where the host transforms (scipy.fft pulls in scipy.special)
    from scipy import fft
    return fft.rfftn(mesh, overwrite_x=True, workers=-1)


def power_spectrum(pos: np.ndarray, box: float, n_mesh: int, *, mass: np.ndarray | None = None,
                   order: int = 3, interlace: bool = True, subtract_shot_noise: bool = True,
                   n_bins: int | None = None, k_max: float | None = None,
                   runtime: Any = None) -> PowerSpectrum:
    """P(k) of the particles at ``pos`` ((N, 3), length; wrapped into the box [0, ``box``)³)
    with masses ``mass`` ((N,), any unit; default equal), on an ``n_mesh``³ mesh: the
    estimator of the module docstring.  ``order`` 2 (CIC) or 3 (TSC); ``interlace``: average
    with the mesh shifted by half a cell; ``subtract_shot_noise``: subtract V Σm²/(Σm)²
    (right for a Poisson-like sample; a lattice has none).  Shells of equal width from
    k_f/2 to ``k_max`` + k_f/2 (2π/length; default the Nyquist π n_mesh / box), ``n_bins``
    of them (default: width k_f, centred on k_f, 2 k_f, ...).  ``runtime``: an OpenCL
    :class:`~hybridtree.device.runtime.Runtime` with double precision to assign and
    transform on (:mod:`.power_device`; where its float64 mesh does not fit the device,
    the compact float32 one of :mod:`.power_compact`, P(k) to 2e-7; the host's numpy
    and scipy otherwise, and where the device cannot take the case): the same P(k) to
    rounding.  Returns a
    :class:`PowerSpectrum` (k in 2π/length, P and shot noise in length³)."""
    pos = np.asarray(pos, dtype=np.float64)
    if pos.ndim != 2 or pos.shape[1] != 3 or len(pos) == 0:
        raise ValueError(f"pos must be a non-empty (N, 3) array, got shape {pos.shape}")
    if not (np.isfinite(box) and box > 0):
        raise ValueError(f"box must be > 0, got {box!r}")
    if int(n_mesh) != n_mesh or n_mesh < 2:
        raise ValueError(f"n_mesh must be an integer >= 2, got {n_mesh!r}")
    n_mesh = int(n_mesh)
    if order not in (2, 3):
        raise ValueError(f"order must be 2 (CIC) or 3 (TSC), got {order!r}")
    mass = (np.ones(len(pos)) if mass is None else
            np.broadcast_to(np.asarray(mass, dtype=np.float64), (len(pos),)))
    total = float(mass.sum())
    if not (np.all(np.isfinite(pos)) and np.all(np.isfinite(mass)) and total > 0):
        raise ValueError("positions and masses must be finite and the total mass > 0")
    box = float(box)

    kf = 2.0 * np.pi / box
    k_max = np.pi * n_mesh / box if k_max is None else float(k_max)
    if n_bins is None:
        n_bins = max(1, int(np.floor(k_max / kf + 1e-9)))
    edges = 0.5 * kf + np.linspace(0.0, k_max, n_bins + 1)

    # δ^DFT = Σ_j δ_j e^{-ik·x_j} with δ_j = mesh_j n³ / Σm − 1: the −1 is k = 0 only
    scale = n_mesh ** 3 / total
    axes = AxisTables.make(n_mesh, order, kf)
    on_device = usable(runtime, len(pos), n_mesh)
    if on_device and prefer_compact(runtime, len(pos), n_mesh):
        modes, sum_k, sum_p = compact_power_sums(runtime, pos, mass, box, n_mesh, order,
                                                 interlace, scale, edges, axes)
    elif on_device:
        per_slab = device_shell_sums(runtime, pos, mass, box, n_mesh, order, interlace, scale,
                                     edges, axes)
        sum_p = np.zeros(n_bins + 2)
        sum_k = np.zeros(n_bins + 2)
        modes = np.zeros(n_bins + 2)
        for m, k, p in per_slab.transpose(0, 2, 1):     # slab order: the host's sums
            modes += m
            sum_k += k
            sum_p += p
    else:
        modes, sum_k, sum_p = _host_shell_sums(pos, mass, box, n_mesh, order, interlace,
                                               scale, edges, axes)
    keep = modes[1:-1] > 0
    modes, sum_k, sum_p = modes[1:-1][keep], sum_k[1:-1][keep], sum_p[1:-1][keep]
    volume = box ** 3
    power = sum_p / modes * (volume / n_mesh ** 6)
    shot = volume * float(np.sum(mass * mass)) / total ** 2
    if subtract_shot_noise:
        power = power - shot
    return PowerSpectrum(k=sum_k / modes, power=power, modes=modes.astype(np.int64),
                         shot_noise=shot, box=box, n_mesh=n_mesh, n_particles=len(pos))


def _host_shell_sums(pos: np.ndarray, mass: np.ndarray, box: float, n_mesh: int, order: int,
                     interlace: bool, scale: float, edges: np.ndarray, axes: AxisTables
                     ) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """(modes, Σ count |k|, Σ count P) per shell (len(edges) + 1 of them, the first below
    and the last beyond the edges) of :func:`power_spectrum` on the host: the meshes by
    :func:`hybridtree.gravity.pm.assign_mass`, scipy's FFTs, the slabs on every core."""
    n_bins2 = len(edges) + 1
    delta = _fft(assign_mass(pos, mass, n_mesh, box, order, 0.0))
    other = (_fft(assign_mass(pos, mass, n_mesh, box, order, 0.5 * box / n_mesh))
             if interlace else None)

    def slab(i: int) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        return slab_shell_sums(i, delta[i], None if other is None else other[i], n_mesh,
                               order, scale, edges, axes)

    sum_p = np.zeros(n_bins2)
    sum_k = np.zeros(n_bins2)
    modes = np.zeros(n_bins2)
    # the slabs on every core (numpy lets the GIL go), summed in slab order: the same
    # bits as one slab after another
    with ThreadPoolExecutor(max(1, min(n_mesh, os.cpu_count() or 1))) as pool:
        for m, k, p in pool.map(slab, range(n_mesh)):
            modes += m
            sum_k += k
            sum_p += p
    return modes, sum_k, sum_p


@dataclass(frozen=True)
class PeriodicParticles:
    """What :func:`read_periodic` takes from a snapshot: ``pos`` (N, 3) and ``box``
    comoving in Mpc/h, ``mass`` (N,) in the file's mass unit (only ratios matter),
    ``time`` (``Header/Time``: the scale factor of a cosmological file), ``note`` (how
    the length unit was found)."""
    pos: np.ndarray
    mass: np.ndarray
    box: float
    time: float
    note: str


def _length_unit(f: h5py.File, path: Path) -> tuple[float, str]:
    """The file's length unit in cm and where it was found (the readers' order:
    hybridtree's ``Units``, GADGET-4's ``Parameters``, GADGET-2's ``Header``, hybridtree's
    ``units.length_cm`` setting, else GADGET's default kpc)."""
    places = [(g, "UnitLength_in_cm") for g in ("Units", "Parameters", "Header")]
    for group, key in places + [("Parameters", "units.length_cm")]:
        if group in f and key in f[group].attrs:
            value = attr_number(f[group].attrs, key)
            if value is None or not (np.isfinite(value) and value > 0):
                raise SnapshotError(f"{path}: {group}/{key} is not a positive length")
            return value, f"{group}/{key}"
    return GADGET_LENGTH_CM, "none stated: GADGET's default"


def read_periodic(path: str | Path) -> PeriodicParticles:
    """The comoving positions and masses of every ``PartTypeN`` group of a periodic
    GADGET-style snapshot (any file of a multi-file set, or its stem), in Mpc/h.

    ``Header/BoxSize`` must be > 0 (else SnapshotError: not a periodic box).  Coordinates
    and BoxSize are read as GADGET writes them, comoving in the file's length unit / h
    (``UnitLength_in_cm``, default 3.085678e21 cm: kpc/h); a ``Coordinates`` dataset whose
    ``h_scaling`` attribute is 0 holds lengths without the 1/h (a file of hybridtree
    written without cosmology), which are multiplied by ``HubbleParam`` (1 if absent).
    Masses from ``Masses`` or ``Header/MassTable``."""
    files = snapshot_files(path)
    with open_file(files[0]) as f:
        header = f["Header"].attrs if "Header" in f else {}
        box = attr_number(header, "BoxSize")
        if box is None or not (np.isfinite(box) and box > 0):
            raise SnapshotError(f"{path} is not a periodic box (no BoxSize)")
        time = attr_number(header, "Time", 0.0)
        unit_cm, where = _length_unit(f, files[0])
        h = attr_number(header, "HubbleParam",
                        attr_number(f["Parameters"].attrs, "HubbleParam", 1.0)
                        if "Parameters" in f else 1.0)
    blocks = []         # (file, group, rows): sized first, so that each is read in place
    for q in files:
        with open_file(q) as f:
            for t in range(N_TYPES):
                g = f.get(f"PartType{t}")
                if g is None or "Coordinates" not in g or g["Coordinates"].shape[0] == 0:
                    continue
                if g["Coordinates"].ndim != 2 or g["Coordinates"].shape[1] != 3:
                    raise SnapshotError(f"{q}: PartType{t}/Coordinates is not an (N, 3) array")
                blocks.append((q, f"PartType{t}", g["Coordinates"].shape[0]))
    if not blocks:
        raise SnapshotError(f"{path}: no particles (no PartTypeN/Coordinates)")
    n = sum(rows for _, _, rows in blocks)
    pos, mass = np.empty((n, 3)), np.empty(n)
    lo, per_h = 0, None
    for q, name, rows in blocks:
        with open_file(q) as f:
            g, sel = f[name], np.s_[lo:lo + rows]
            g["Coordinates"].read_direct(pos, dest_sel=sel)     # converted to float64 by HDF5
            table = np.asarray(f["Header"].attrs.get("MassTable", np.zeros(N_TYPES)),
                               np.float64).reshape(-1) if "Header" in f else np.zeros(0)
            t = int(name[len("PartType"):])
            if "Masses" in g:
                g["Masses"].read_direct(mass, dest_sel=sel)
            elif t < len(table) and table[t] > 0:
                mass[sel] = table[t]
            else:
                raise SnapshotError(f"{q}: {name} has no Masses and no MassTable entry")
            scaling = attr_number(g["Coordinates"].attrs, "h_scaling", -1.0)
            per_h = scaling != 0 if per_h is None else per_h
            if per_h != (scaling != 0):
                raise SnapshotError(f"{q}: {name}/Coordinates has h_scaling {scaling:g} "
                                    f"unlike the other groups")
        lo += rows
    if not per_h and not (h is not None and np.isfinite(h) and h > 0):
        raise SnapshotError(f"{path}: Coordinates without 1/h (h_scaling 0) and no "
                            f"positive HubbleParam to make them per h")
    to_mpc_h = unit_cm / MPC_CM * (1.0 if per_h else h)
    note = (f"length unit {unit_cm:.7g} cm ({where}), comoving per h"
            + ("" if per_h else f" after × HubbleParam = {h:g} (Coordinates/h_scaling = 0)"))
    pos *= to_mpc_h
    return PeriodicParticles(pos, mass, box * to_mpc_h, float(time), note)


def snapshot_power(path: str | Path, n_mesh: int | None = None, order: int = 3,
                   interlace: bool = True, runtime: Any = None
                   ) -> tuple[PowerSpectrum, PeriodicParticles]:
    """P(k) of a periodic snapshot (:func:`read_periodic`) in GADGET's cosmology units: k in
    h/Mpc, P and shot noise (subtracted) in (Mpc/h)³; ``n_mesh`` default
    :func:`default_mesh`; ``runtime`` as :func:`power_spectrum`'s.  Returns it and what
    was read."""
    snap = read_periodic(path)
    n_mesh = default_mesh(len(snap.mass)) if n_mesh is None else n_mesh
    return power_spectrum(snap.pos, snap.box, n_mesh, mass=snap.mass, order=order,
                          interlace=interlace, runtime=runtime), snap


def power_table(ps: PowerSpectrum, snap: PeriodicParticles | None = None, source: str = "",
                order: int = 3, interlace: bool = True) -> str:
    """A text table of ``ps`` (columns k [h/Mpc], P [(Mpc/h)³], modes) below ``#`` lines
    stating the box, mesh, particles, shot noise and (from ``snap``) the time."""
    scheme = {2: "CIC", 3: "TSC"}[order] + (", interlaced" if interlace else "")
    lines = [f"# matter power spectrum{' of ' + source if source else ''} (hybridtree pk)",
             f"# box = {ps.box:.8g} Mpc/h, mesh = {ps.n_mesh}^3 ({scheme}), "
             f"N = {ps.n_particles} particles",
             f"# shot noise V sum(m^2)/(sum m)^2 = {ps.shot_noise:.6e} (Mpc/h)^3, "
             f"subtracted from P",
             f"# shells of width 2 pi/box centred on 2 pi/box ... the Nyquist "
             f"{np.pi * ps.n_mesh / ps.box:.6g} h/Mpc; k: their modes' mean |k|"]
    if snap is not None:
        z = f", z = 1/Time - 1 = {1.0 / snap.time - 1.0:.6g}" if snap.time > 0 else ""
        lines += [f"# Time = {snap.time:.8g}{z}", f"# {snap.note}"]
    lines.append(f"# {'k [h/Mpc]':>14} {'P [(Mpc/h)^3]':>15} {'modes':>10}")
    lines += [f"{k:16.8e} {p:15.7e} {m:10d}" for k, p, m in zip(ps.k, ps.power, ps.modes)]
    return "\n".join(lines) + "\n"
