#!/usr/bin/env python
"""Log-log plot of force time against N for the tree and the direct kernel, from the
tables that scripts/bench/force.py prints (one or more files); marks the crossover.

    python scripts/model/plot_scaling.py docs/data/h100_scaling_*.txt --out docs/time_vs_n.png
"""

from __future__ import annotations

import argparse
from collections import defaultdict

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402
import numpy as np  # noqa: E402


def read_rows(paths: list[str]) -> dict[str, dict[int, tuple[float, float]]]:
    """{label: {N: (kernel s, total s)}} from force.py table lines; the fastest row
    per label and N (direct: the plain and precise variants are separate labels)."""
    out: dict[str, dict[int, tuple[float, float]]] = defaultdict(dict)
    for path in paths:
        for line in open(path):
            f = line.split()
            if len(f) < 14 or not f[0].isdigit() or f[1] not in ("tree/device", "direct"):
                continue
            n, walk, total = int(f[0]), float(f[8]), float(f[9])   # device is two words
            label = "tree" if f[1] == "tree/device" else \
                ("direct, hi+lo" if f[4] == "True" else "direct, plain")
            if n not in out[label] or total < out[label][n][1]:
                out[label][n] = (walk, total)
    return out


def crossover(a: dict[int, float], b: dict[int, float]) -> float | None:
    """N where log t_a - log t_b changes sign (log-log interpolation), or None."""
    ns = sorted(set(a) & set(b))
    d = [np.log(a[n]) - np.log(b[n]) for n in ns]
    for i in range(len(ns) - 1):
        if d[i] * d[i + 1] < 0:
            x0, x1 = np.log(ns[i]), np.log(ns[i + 1])
            return float(np.exp(x0 + (x1 - x0) * d[i] / (d[i] - d[i + 1])))
    return None


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("tables", nargs="+")
    p.add_argument("--out", required=True)
    p.add_argument("--title", default="NVIDIA H100, Plummer sphere, eps = 0.01, theta = 0.5")
    args = p.parse_args()
    rows = read_rows(args.tables)
    fig, ax = plt.subplots(figsize=(6.4, 4.6))
    styles = {"tree": "o-", "direct, hi+lo": "s--", "direct, plain": "^--"}
    for label, data in sorted(rows.items()):
        ns = np.array(sorted(data))
        ax.loglog(ns, [data[n][1] for n in ns], styles[label], label=f"{label}: whole call")
        ax.loglog(ns, [data[n][0] for n in ns], styles[label], alpha=0.4, mfc="none",
                  label=f"{label}: kernel")
    for kind, k in (("whole call", 1), ("kernel", 0)):
        x = crossover({n: t[k] for n, t in rows["tree"].items()},
                      {n: t[k] for n, t in rows["direct, plain"].items()})
        if x:
            ax.axvline(x, color="grey", lw=0.8, ls=":" if k else "-.")
            print(f"crossover tree / plain direct ({kind}): N = {x:.3g}")
    ax.set_xlabel("N")
    ax.set_ylabel("seconds per force evaluation")
    ax.set_title(args.title, fontsize=9)
    ax.legend(fontsize=7)
    ax.grid(True, which="both", alpha=0.3)
    fig.tight_layout()
    fig.savefig(args.out, dpi=110)
    print("wrote", args.out)


if __name__ == "__main__":
    main()
