"""Numbers as ``hybridtree plot``'s figures write them (see :mod:`hybridtree.analysis.plot`): plain
(2, 0.5, 300) where they are of everyday size, with a power of ten (10⁻⁵, 1.39×10⁹)
otherwise; on log axes and in the figures' notes alike."""

from __future__ import annotations

import math
from types import MappingProxyType

from matplotlib.ticker import LogFormatterSciNotation

__all__ = ["PLAIN_RANGE", "PlainLogFormatter", "number_text", "plain_log_ticks"]

#: numbers of this size [low, high) are written out; others with a power of ten
PLAIN_RANGE = (1e-3, 1e4)
_SUPERSCRIPT = MappingProxyType(str.maketrans("-0123456789", "⁻⁰¹²³⁴⁵⁶⁷⁸⁹"))


def _plain(x: float) -> bool:
    return PLAIN_RANGE[0] <= abs(x) < PLAIN_RANGE[1]


class PlainLogFormatter(LogFormatterSciNotation):
    """Log-axis tick labels as plain numbers where :data:`PLAIN_RANGE` holds them
    ("0.3", "2", "2000", not "3×10⁻¹", "2×10⁰"); matplotlib's labels (10⁻⁵, 2×10⁹)
    elsewhere.  Which ticks get a label is matplotlib's choice, as before."""

    def __call__(self, x, pos=None):
        text = super().__call__(x, pos)
        return f"{x:.6g}" if text and _plain(x) else text


def plain_log_ticks(axis) -> None:
    """Label the major and minor ticks of a log-scaled ``axis`` (an Axis) with
    :class:`PlainLogFormatter` (the minor ones as matplotlib's log scale chooses them)."""
    axis.set_major_formatter(PlainLogFormatter())
    axis.set_minor_formatter(PlainLogFormatter(labelOnlyBase=False))


def number_text(x: float, digits: int = 3) -> str:
    """``x`` to ``digits`` significant digits for a figure's text: "0.25", "1390",
    "1.39×10⁹", "5×10⁻⁵" (plain text, no mathtext)."""
    if x == 0 or not math.isfinite(x) or _plain(x):
        return f"{x:.{digits}g}"
    exp = math.floor(math.log10(abs(x)))
    mantissa = f"{x / 10.0 ** exp:.{digits}g}"
    if abs(float(mantissa)) >= 10:               # 9.999 rounded up to 10
        exp += 1
        mantissa = f"{x / 10.0 ** exp:.{digits}g}"
    return f"{mantissa}×10{str(exp).translate(_SUPERSCRIPT)}"
