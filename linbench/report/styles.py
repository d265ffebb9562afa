"""How each impl looks in a figure: a colour, a line style and a marker that tell every series
apart, in colour and printed in greyscale.

- **Hue and line style: the variant.** Each variant takes a colour map of its own (cosine blue,
  the next variant red, then green, purple, orange...; softmax grey) and a line style (softmax,
  the baseline, always dashed).
- **Shade and marker: the impl.** The impls of a variant take shades of its colour map from
  dark to light, far enough apart to differ in greyscale (five impls: about 0.1 of luminance
  apart); each impl name takes a marker, the same in every variant (``chunked`` is the same
  marker in cosine and linear).

So no two series of a figure share both line style and marker while there are no more variants
than line styles and no more impl names than markers, and the impls of one variant also differ
in lightness.
"""

from __future__ import annotations

from dataclasses import dataclass

import pandas as pd
from matplotlib import colormaps
from matplotlib.colors import to_hex

BASELINE_VARIANT = "softmax"
COLOUR_MAPS = ("Blues", "Reds", "Greens", "Purples", "Oranges", "YlOrBr", "PuRd", "BuGn", "RdPu")
BASELINE_MAP = "Greys"
BASELINE_LINE = "--"
LINE_STYLES = ("-", "-.", ":", (0, (5, 1, 1, 1, 1, 1)), (0, (1, 1)), (0, (8, 3)), (0, (3, 1, 1, 1)))
MARKERS = ("o", "s", "^", "D", "v", "P", "X", "<", ">", "h", "p", "d")  # "*" marks crossovers
# Where in its colour map a variant's impls sit: the darkest, and the lightest for five impls
# or fewer (more spread further towards white, keeping ~0.1 of the map between neighbours).
DARKEST = 0.95
LIGHTEST = 0.45
SHADE_STEP = 0.1


@dataclass(frozen=True)
class SeriesStyle:
    colour: str
    linestyle: object
    marker: str


def series_styles(rows: pd.DataFrame) -> dict[tuple[str, str], SeriesStyle]:
    """The style of every (variant, impl) in ``rows``, by the module's rules (order: as the run
    wrote them)."""
    pairs = list(dict.fromkeys(zip(rows["variant"], rows["impl"], strict=True)))
    variants = list(dict.fromkeys(variant for variant, _ in pairs))
    others = [variant for variant in variants if variant != BASELINE_VARIANT]
    markers = {impl: MARKERS[n % len(MARKERS)] for n, impl in enumerate(dict.fromkeys(impl for _, impl in pairs))}
    styles: dict[tuple[str, str], SeriesStyle] = {}
    for variant in variants:
        if variant == BASELINE_VARIANT:
            colour_map, line = BASELINE_MAP, BASELINE_LINE
        else:
            n = others.index(variant)
            colour_map, line = COLOUR_MAPS[n % len(COLOUR_MAPS)], LINE_STYLES[n % len(LINE_STYLES)]
        impls = [impl for v, impl in pairs if v == variant]
        for impl, shade in zip(impls, _shades(len(impls)), strict=True):
            styles[(variant, impl)] = SeriesStyle(to_hex(colormaps[colour_map](shade)), line, markers[impl])
    return styles


def _shades(count: int) -> list[float]:
    """Positions in a colour map for ``count`` impls, dark to light: one sits mid-map, two 0.3
    apart, up to five between ``DARKEST`` and ``LIGHTEST``, more ``SHADE_STEP`` apart down to 0.25."""
    if count == 1:
        return [0.8]
    if count == 2:
        return [DARKEST, DARKEST - 0.3]
    lightest = LIGHTEST if count <= 5 else max(0.25, DARKEST - SHADE_STEP * (count - 1))
    return [DARKEST + (lightest - DARKEST) * k / (count - 1) for k in range(count)]
