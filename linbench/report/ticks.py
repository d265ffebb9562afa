"""Tick marks of a log axis that are labelled however little of the axis the data spans.

Matplotlib's log locator puts major ticks at whole decades only: an axis from 300 to 450
GFLOP/s (any throughput plot) has none and shows no number at all, and one from 60 to 400 shows
"100" alone. ``ReadableLogLocator`` takes the sparsest ladder of ticks that puts at least
``MIN_TICKS`` inside the view: whole decades (every second or third one over a wide range), then
1-3, 1-2-5, 1-2-3-5-7 and every integer multiple of each decade; over less than a factor two, where
a log axis is all but linear, evenly spaced round numbers. Byte axes climb the same way from
powers of four and of two, through 1.5 and 1.25 times them, to round numbers.
"""

from __future__ import annotations

import math
from collections.abc import Sequence

from matplotlib.ticker import Locator, MaxNLocator

MIN_TICKS = 3
MAX_TICKS = 9
# Mantissas of a decade, from sparse to dense (base 10), and of a power of two (bytes).
DECIMAL_LADDERS: tuple[tuple[float, ...], ...] = ((1,), (1, 3), (1, 2, 5), (1, 2, 3, 5, 7), tuple(range(1, 10)))
BINARY_LADDERS: tuple[tuple[float, ...], ...] = ((1,), (1, 1.5), (1, 1.25, 1.5, 1.75))


class ReadableLogLocator(Locator):
    """Major ticks of a log axis, base 10 or (``binary``) powers of two, at least ``MIN_TICKS``
    of them inside the view whatever its span (see the module)."""

    def __init__(self, binary: bool = False) -> None:
        self.binary = binary

    def __call__(self) -> Sequence[float]:
        if self.axis is None:  # not yet set on an axis: no view, so no ticks
            return []
        vmin, vmax = self.axis.get_view_interval()
        return self.tick_values(vmin, vmax)

    def tick_values(self, vmin: float, vmax: float) -> list[float]:
        vmin, vmax = sorted((vmin, vmax))
        if not (vmax > 0 and math.isfinite(vmin) and math.isfinite(vmax)):
            return []
        vmin = max(vmin, vmax * 1e-30)
        base = 2.0 if self.binary else 10.0
        lo, hi = math.floor(math.log(vmin, base)) - 1, math.ceil(math.log(vmax, base)) + 1
        # Whole powers: of 4 for bytes, then of 2; of 10, every k-th over a wide range.
        strides = [2, 1] if self.binary else list(range(max(1, math.ceil((hi - lo) / MAX_TICKS)), 0, -1))
        for stride in strides:
            ticks = [base**e for e in range(lo, hi + 1) if e % stride == 0]
            if _inside(ticks, vmin, vmax) >= MIN_TICKS:
                return ticks
        for mantissas in (BINARY_LADDERS if self.binary else DECIMAL_LADDERS)[1:]:
            ticks = [m * base**e for e in range(lo, hi + 1) for m in mantissas]
            if _inside(ticks, vmin, vmax) >= MIN_TICKS:
                return ticks
        # Less than a factor ~2 (a decade's 1..9 left fewer than three inside): round, even steps
        # (of KiB, MiB or GiB on a byte axis).
        unit = 1024.0 ** max(0, math.floor(math.log(vmax, 1024))) if self.binary else 1.0
        for bins in range(4, 2 * MAX_TICKS):
            steps = MaxNLocator(nbins=bins, steps=[1, 2, 2.5, 5, 10]).tick_values(vmin / unit, vmax / unit)
            ticks = [t * unit for t in steps if t > 0]
            if _inside(ticks, vmin, vmax) >= MIN_TICKS:
                break
        return ticks


def _inside(ticks: list[float], vmin: float, vmax: float) -> int:
    return sum(vmin <= t <= vmax for t in ticks)
