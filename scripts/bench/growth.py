#!/usr/bin/env python
"""Linear growth of a cosmo_sphere run (a benchmark, not a test): how the large-scale
displacements of the sphere's inner half grow from the first snapshot (z_start) to the
one closest to ``--z`` (default 8.9), against linear theory of the isolated sphere from
that first snapshot (g_iso), and against D(a1) / D(a0).

    python -m hybridtree run configs/cosmo_small.toml --set output.dir=/tmp/gr_small --quiet
    PYTHONPATH=. python scripts/bench/growth.py configs/cosmo_small.toml /tmp/gr_small
    PYTHONPATH=. python scripts/bench/growth.py configs/cosmo_sphere.toml out_cosmo_sphere --json g.json

The config (with the run's ``--set``) gives n_grid, box, radius and the background.
Displacements ψ = r / a - q (q from the particle ID) of the particles with |q| < ``--inner``
× radius (default 0.5: untouched by the vacuum outside by z = 9), on the n_grid³ grid at
their own cell, zero elsewhere, are Fourier transformed.  Over 0 < |k| < k_max (``--k-max``,
internal 1/L; default 2π / (8 Mpc/h)) and the three components: the least-squares growth
g = Σ Re(ψ1_k ψ0_k*) / Σ |ψ0_k|² and r = Σ Re(ψ1_k ψ0_k*) / sqrt(Σ |ψ1_k|² Σ |ψ0_k|²);
also over all modes (the particles' ψ, by Parseval) and per shell of |k| (octaves of k_max;
``modes`` counts k and -k).  Each row gives g/D - 1 and the run's test g/g_iso - 1: g_iso is
the same measure on ``isolated_linear``'s ψ(a1), all the first snapshot's particles (ψ and
ψ' = (v - H r) / (a H)) integrated to a1; ``--no-reference`` skips it.

Why not D(a1)/D(a0): the initial ψ is the periodic field's, sourced by the density outside
the sphere too; the run has vacuum there, so that part of ψ (harmonic inside: bulk flow,
tide, ...) is sourced no more and grows less.  At z = 8.9, k < k_max, g_iso/D - 1 = -3.83 %
(cosmo_small), -6.74 % (cosmo_sphere), and the cosmo_small run has g/g_iso - 1 = -0.46 %.
At high k g/g_iso falls (-5.6 % at 4 /L, cosmo_small): the reference is a continuum, the
run a particle lattice with a tree's forces; 2LPT's ψ2 (∝ D²) is small at large scales.
"""

from __future__ import annotations

import argparse
import json
import time
from pathlib import Path
from typing import Any, Callable

import numpy as np
import scipy.fft as sfft
from common import ROOT  # noqa: F401  (the checkout on sys.path)

from hybridtree.config import load_config, parse_overrides
from hybridtree.ics.cosmological import lagrangian_positions
from hybridtree.io.snapshot import SNAPSHOT_RE, file_cosmology, read_snapshot
from hybridtree.run.options import background_of


def read_psi(path: Path, n: int, box: float,
             bg: Any) -> tuple[float, np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
    """(a, cell index (m,), q (m, 3), ψ (3, m), dψ/d ln a = (v - H r) / (a H) (3, m)) of
    all particles of snapshot ``path``."""
    a = file_cosmology(path).a
    p = read_snapshot(path).particles
    q, h = lagrangian_positions(p.ids, n, box), float(bg.H(a))
    return (a, p.ids.astype(np.int64) - 1, q, (p.pos / a - q).T.copy(),
            ((p.vel - h * p.pos) / (a * h)).T.copy())


def to_k(cells: np.ndarray, psi: np.ndarray, n: int) -> np.ndarray:
    """ψ (3, m) on its cells of the n³ grid, zero elsewhere: rfftn of each component."""
    field = np.zeros((3, n ** 3))
    field[:, cells] = psi
    return sfft.rfftn(field.reshape(3, n, n, n), axes=(1, 2, 3), workers=-1)


def longitudinal(ijk: np.ndarray, N: int, dx: float) -> Callable[[np.ndarray], np.ndarray]:
    """F (3, m) on the distinct cells ``ijk`` (3, m) of the periodic N³ grid of spacing dx,
    zero elsewhere → k k·F_k / k² (float32 FFTs) + mean(F) / 3 at those cells: the mean
    term puts back the uniform field that the k = 0 term of the images takes away."""
    flat = (ijk[0] * N + ijk[1]) * N + ijk[2]
    k1 = (2 * np.pi / (N * dx) * np.fft.fftfreq(N, 1.0 / N)).astype(np.float32)
    kk = [k1[:, None, None], k1[None, :, None], np.abs(k1[None, None, :N // 2 + 1])]
    inv_k2 = kk[0] ** 2 + kk[1] ** 2 + kk[2] ** 2
    inv_k2[0, 0, 0] = 1.0
    np.reciprocal(inv_k2, out=inv_k2)
    grid = np.zeros((N, N, N), np.float32)
    div, tmp = (np.empty((N, N, N // 2 + 1), np.complex64) for _ in range(2))

    def apply(f: np.ndarray) -> np.ndarray:
        out = np.empty_like(f)
        for j in range(3):                               # div = k·F_k / k²
            grid.reshape(-1)[flat] = f[j]
            fk = np.multiply(sfft.rfftn(grid, workers=-1), kk[j], out=tmp if j else div)
            if j:
                np.add(div, fk, out=div)
        np.multiply(div, inv_k2, out=div)
        for j in range(3):
            np.multiply(div, kk[j], out=tmp)
            out[j] = sfft.irfftn(tmp, s=(N,) * 3, overwrite_x=True, workers=-1).reshape(-1)[flat]
        return out + f.sum(axis=1, keepdims=True) / N ** 3 / 3.0
    return apply


def isolated_linear(cells: np.ndarray, psi0: np.ndarray, dpsi0: np.ndarray, n: int,
                    box: float, bg: Any, a0: float, a1: float, pad: int = 2,
                    steps: int = 8, coarse: int = 4, far: int = 4) -> np.ndarray:
    """ψ(a1) (3, m) on ``cells`` by linear theory of the isolated sphere, RK4 in ln a:

        ψ'' + (2 + d ln H / d ln a) ψ' = (3/2) Ω_m(a) P ψ,  ' = d / d ln a,  ψ'(a0) = dpsi0;

    P ψ = ∇ ∇⁻² ∇·(ψ M), the gravity of the linear density -∇·(ψ M) of the sphere's cells M
    alone, in infinite space: ``longitudinal`` on the zero-padded (pad n)³ grid, plus the
    rest of the images' field (smooth, ~ (R / pad box)⁵) taken away on a grid ``coarse``
    times coarser (ψ summed over its blocks) as padding ``far`` minus ``pad`` there.
    Measured (z 49 → 8.9, k < k_max): P ψ0·ψ0 as with fine padding 4 to 1e-6 (cosmo_sphere;
    pad 2 alone 8e-4) and 1e-5 (cosmo_small; up to 1.5e-4 in the shells above k_max);
    g_iso with 4 / 8 steps as with 32 to 2e-4 / 2e-5; float32 FFTs as float64 to 1e-6;
    periodic (M everywhere, pad = far = 1): g = D(a1)/D(a0) to 2e-5.  Cost: 4 × steps × 6
    FFTs of (pad n)³ (+14 % coarse); ~1.6 GB at n = 176 beside the snapshots."""
    ijk = np.stack([cells // (n * n), (cells // n) % n, cells % n])
    fine, nc, ic = longitudinal(ijk, pad * n, box / n), -(-n // coarse), ijk // coarse
    uc, inv = np.unique((ic[0] * nc + ic[1]) * nc + ic[2], return_inverse=True)
    uc = np.stack([uc // (nc * nc), (uc // nc) % nc, uc % nc])
    near, farther = (longitudinal(uc, p * nc, coarse * box / n) for p in (pad, far))

    def accel(lna: float, y: np.ndarray, v: np.ndarray) -> np.ndarray:
        z = 1.0 / np.exp(lna) - 1.0
        om, ok = float(bg.colossus.Om(z)), float(bg.colossus.Ok(z))
        yc = np.stack([np.bincount(inv, y[j]) for j in range(3)]) / coarse ** 3
        force = fine(y) + (farther(yc) - near(yc))[:, inv]
        return 1.5 * om * force - (2.0 - 1.5 * om - ok) * v      # 2 + d ln H / d ln a

    y, v, t = psi0.astype(np.float64), dpsi0.astype(np.float64), np.log(a0)
    h = (np.log(a1) - t) / steps
    for _ in range(steps):
        ky, kv = v, accel(t, y, v)
        dy, dv = ky.copy(), kv.copy()
        for c, w in ((0.5, 2.0), (0.5, 2.0), (1.0, 1.0)):
            ky, kv = v + c * h * kv, accel(t + c * h, y + c * h * ky, v + c * h * kv)
            dy += w * ky
            dv += w * kv
        y, v, t = y + h / 6 * dy, v + h / 6 * dv, t + h
    return y


def wavenumbers(n: int, box: float) -> tuple[np.ndarray, np.ndarray]:
    """|k| (internal 1/L) and the number of full-grid modes each rfftn entry stands for
    (2, or 1 on the k_z = 0 and Nyquist planes)."""
    kf = 2 * np.pi / box
    k1, kz = kf * np.fft.fftfreq(n, 1.0 / n), kf * np.arange(n // 2 + 1)
    k = np.sqrt(k1[:, None, None] ** 2 + k1[None, :, None] ** 2 + kz[None, None, :] ** 2)
    weight = np.full(k.shape, 2.0)
    weight[:, :, [0, n // 2] if n % 2 == 0 else [0]] = 1.0
    return k, weight


def growth(p0: np.ndarray, p1: np.ndarray, w: np.ndarray, keep: np.ndarray) -> dict:
    """Least-squares growth, cross-correlation and mode count over the entries ``keep``."""
    ww = np.where(keep, w, 0.0)
    cross = float(np.sum(ww * (p1 * p0.conj()).real))
    s0, s1 = float(np.sum(ww * np.abs(p0) ** 2)), float(np.sum(ww * np.abs(p1) ** 2))
    return {"g": cross / s0, "r": cross / np.sqrt(s0 * s1), "modes": int(round(ww.sum()))}


def main(argv: list[str] | None = None) -> dict:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("config")
    ap.add_argument("folder", help="the run's output folder (snapshot_*.hdf5)")
    ap.add_argument("--set", action="append", default=[], help="the run's --set overrides")
    ap.add_argument("--z", type=float, default=8.9, help="the redshift to measure at")
    ap.add_argument("--k-max", type=float, default=None,
                    help="largest |k| kept, internal 1/length (default: 2 pi / (8 Mpc/h))")
    ap.add_argument("--inner", type=float, default=0.5, help="|q| < inner x radius")
    ap.add_argument("--no-reference", action="store_true", help="skip g_iso (isolated_linear)")
    ap.add_argument("--ref-pad", type=int, default=2, help="its grid: pad x n_grid")
    ap.add_argument("--ref-steps", type=int, default=8, help="its RK4 steps in ln a")
    ap.add_argument("--json", default=None)
    args = ap.parse_args(argv)
    settings = load_config(args.config, parse_overrides(args.set))
    c, bg = settings.ics, background_of(settings)
    if c.kind != "cosmo_sphere" or bg is None:
        raise SystemExit(f"{args.config}: not a cosmological cosmo_sphere run")
    snaps = sorted(p for p in Path(args.folder).glob("snapshot_*.hdf5")
                   if (m := SNAPSHOT_RE.match(p.name)) and m.group(2) in (None, "0"))
    if len(snaps) < 2:
        raise SystemExit(f"{args.folder}: fewer than two snapshots")
    z_of = {s: 1 / file_cosmology(s).a - 1 for s in snaps[1:]}
    later = min(z_of, key=lambda s: abs(z_of[s] - args.z))
    k_max = args.k_max or 2 * np.pi / (8.0 * bg.mpc_h)
    n, r_in = c.n_grid, args.inner * c.radius
    a1, cells, q, psi, _ = read_psi(later, n, c.box, bg)
    keep1 = np.linalg.norm(q, axis=1) < r_in
    p1 = to_k(cells[keep1], psi[:, keep1], n)
    a0, cells, q, psi, dpsi = read_psi(snaps[0], n, c.box, bg)
    keep0 = np.linalg.norm(q, axis=1) < r_in
    p0, pi, t_ref = to_k(cells[keep0], psi[:, keep0], n), None, time.perf_counter()
    if not args.no_reference:
        iso = isolated_linear(cells, psi, dpsi, n, c.box, bg, a0, a1, args.ref_pad,
                              args.ref_steps)
        pi = to_k(cells[keep0], iso[:, keep0], n)
    k, w = wavenumbers(n, c.box)
    expected = float(bg.growth(a1) / bg.growth(a0))
    rows = {"large": (k > 0) & (k < k_max), "all": k > 0}
    edges = k_max * 2.0 ** np.arange(-3, np.log2(k.max() / k_max) + 1)
    for lo, hi in zip(np.r_[0.0, edges[1:-1]], edges[1:]):
        rows[f"shell {lo:.3g}-{hi:.3g}"] = (k >= lo) & (k < hi) & (k > 0)   # k = 0: the mean
    out: dict[str, Any] = {
        "config": args.config, "set": args.set, "folder": str(args.folder),
        "snapshots": [snaps[0].name, later.name], "a0": a0, "z0": 1 / a0 - 1, "a1": a1,
        "z1": 1 / a1 - 1, "expected": expected, "n_grid": n, "box": c.box,
        "radius": c.radius, "inner": args.inner, "lpt": c.lpt, "k_max": k_max,
        "k_max_h_mpc": k_max * bg.mpc_h, "k_fundamental": 2 * np.pi / c.box,
        "reference": None if pi is None else {"pad": args.ref_pad, "steps": args.ref_steps,
                                              "seconds": round(time.perf_counter() - t_ref, 2)}}
    print(f"{later.name}: a1 = {a1:.5g} (z = {1 / a1 - 1:.4g}), a0 = {a0:.5g} (z = "
          f"{1 / a0 - 1:.4g}); D(a1)/D(a0) = {expected:.5f}; k_max = {k_max:.4g}/L "
          f"({out['k_max_h_mpc']:.3g} h/Mpc), k_f = {out['k_fundamental']:.4g}/L; reference: "
          f"{out['reference']}")
    for name, keep in rows.items():
        row, iso = out.setdefault(name, growth(p0, p1, w, keep)), ""
        row["rel"] = row["g"] / expected - 1
        if pi is not None:
            g_iso = growth(p0, pi, w, keep)["g"]
            row |= {"g_iso": g_iso, "iso_rel": g_iso / expected - 1,
                    "rel_iso": row["g"] / g_iso - 1}
            iso = f"  g_iso/D - 1 = {row['iso_rel']:+.3%}  g/g_iso - 1 = {row['rel_iso']:+.3%}"
        print(f"  {name:>18}: g = {row['g']:.5f}  g/D - 1 = {row['rel']:+.3%}{iso}  "
              f"r = {row['r']:.5f}  modes = {row['modes']}")
    if args.json:
        Path(args.json).write_text(json.dumps(out, indent=1, default=float))
    return out


if __name__ == "__main__":
    main()
