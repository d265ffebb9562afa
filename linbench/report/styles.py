"""How each impl looks in a figure: a colour, a marker and a line style that tell every series
apart, in colour and printed in greyscale.

- **Colour: the series.** Every impl of a run takes a hue of its own, in the order the run wrote
  them: the impls of the variants measured from ``IMPL_COLOURS`` (blue, red, green, cyan,
  orange, ...), the baselines (softmax) from ``BASELINE_COLOURS`` (black, grey, brown, ...). The
  first five of each palette are far enough apart in lightness to stay apart printed in
  greyscale (at least 0.08 of luminance), and so are neighbours further on, which the two impls
  of one variant take when several variants are measured side by side.
- **Marker: the impl name**, the same in every variant (``chunked`` is the same marker in cosine
  and linear), so no two impls of one variant share a marker.
- **Line style: the variant** (softmax, the baseline, always dashed).

So two series of a figure never share both colour and marker while the run has no more impls
than a palette has colours, and never share marker and line style while there are no more
variants than line styles and no more impl names than markers.
"""

from __future__ import annotations

from dataclasses import dataclass

import pandas as pd

BASELINE_VARIANT = "softmax"
# Hues far apart; the first five's lightness (ITU-R 601 luma) climbs 0.22, 0.30, 0.44, 0.56, 0.65:
# navy, red, green, cyan, orange; then purple (0.40), pink (0.63), teal (0.29), olive (0.67).
IMPL_COLOURS = ("#123f7a", "#b22222", "#2ca02c", "#17becf", "#f39c12", "#8e44ad", "#e377c2", "#006d5b", "#bcbd22")
# Black, grey (0.50), brown (0.40), lavender (0.65), then rose and dark grey.
BASELINE_COLOURS = ("#000000", "#808080", "#8c564b", "#a39fc9", "#b03060", "#404040")
BASELINE_LINE = "--"
LINE_STYLES = ("-", "-.", ":", (0, (5, 1, 1, 1, 1, 1)), (0, (1, 1)), (0, (8, 3)), (0, (3, 1, 1, 1)))
MARKERS = ("o", "s", "^", "D", "v", "P", "X", "<", ">", "h", "p", "d")  # "*" marks crossovers


@dataclass(frozen=True)
class SeriesStyle:
    colour: str
    linestyle: object
    marker: str


def series_styles(rows: pd.DataFrame) -> dict[tuple[str, str], SeriesStyle]:
    """The style of every (variant, impl) in ``rows``, by the module's rules (order: as the run
    wrote them). Give it a whole run's rows so that an impl looks the same in all its figures."""
    pairs = list(dict.fromkeys(zip(rows["variant"], rows["impl"], strict=True)))
    variants = list(dict.fromkeys(variant for variant, _ in pairs))
    others = [variant for variant in variants if variant != BASELINE_VARIANT]
    markers = {impl: MARKERS[n % len(MARKERS)] for n, impl in enumerate(dict.fromkeys(impl for _, impl in pairs))}
    # A variant's impls take neighbouring colours (apart in lightness too), variant after variant.
    grouped = [(variant, impl) for name in others for variant, impl in pairs if variant == name]
    baselines = [(variant, impl) for variant, impl in pairs if variant == BASELINE_VARIANT]
    styles: dict[tuple[str, str], SeriesStyle] = {}
    for n, (variant, impl) in enumerate(grouped):
        line = LINE_STYLES[others.index(variant) % len(LINE_STYLES)]
        styles[(variant, impl)] = SeriesStyle(IMPL_COLOURS[n % len(IMPL_COLOURS)], line, markers[impl])
    for n, pair in enumerate(baselines):
        styles[pair] = SeriesStyle(BASELINE_COLOURS[n % len(BASELINE_COLOURS)], BASELINE_LINE, markers[pair[1]])
    return styles
