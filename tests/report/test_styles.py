"""Every series of a figure can be told apart, in colour and printed in greyscale (CPU)."""

from __future__ import annotations

import colorsys
import itertools
from pathlib import Path

from matplotlib.colors import to_rgb
from synthetic_runs import series, write_run

from linbench.report.analysis import analyse
from linbench.report.load import read_run
from linbench.report.plot import draw, figures
from linbench.report.plot_parts import metrics
from linbench.report.series import scenarios

COSINE_IMPLS = ("quadratic", "naive", "chunked", "recurrent", "kernel")
# Apart by this much luminance (0..1), two shades stay apart on a greyscale print.
MIN_LUMINANCE_GAP = 0.06
# Apart by this much hue (degrees on the colour wheel), two colours are different colours, not
# two shades of one.
MIN_HUE_GAP = 20.0


def luminance(colour: str) -> float:
    """The grey a colour prints as (ITU-R 601 luma, what a greyscale conversion keeps)."""
    r, g, b = to_rgb(colour)
    return 0.299 * r + 0.587 * g + 0.114 * b


def hue(colour: str) -> float:
    return 360.0 * colorsys.rgb_to_hsv(*to_rgb(colour))[0]


def _series_lines(ax) -> dict[str, object]:
    """The line of each series, by its name in the legend."""
    return {line.get_label().split("  ")[0]: line for line in ax.lines if not line.get_label().startswith("_")}


def _figure(tmp_path: Path, rows: list[dict]):
    run = read_run(write_run(tmp_path, rows, baselines=["softmax:naive", "softmax:sdpa"]))
    ((scenario, scenario_rows),) = scenarios(run.results, "seq")
    return draw(scenario_rows, scenario, metrics("cpu")["time"], analyse(run)).axes[0]


def _check_apart(ax, expected: int) -> None:
    lines = _series_lines(ax)
    assert len(lines) == expected, list(lines)
    pairs = [(line.get_marker(), str(line.get_linestyle())) for line in lines.values()]
    assert len(set(pairs)) == len(pairs), dict(zip(lines, pairs, strict=True))  # marker + line style: unique
    colours = [(line.get_color(), line.get_marker()) for line in lines.values()]
    assert len(set(colours)) == len(colours), dict(zip(lines, colours, strict=True))  # colour + marker: unique
    for (a, line_a), (b, line_b) in itertools.combinations(lines.items(), 2):
        if a.split(":")[0] == b.split(":")[0]:  # impls of one variant: shades apart in greyscale too
            gap = abs(luminance(line_a.get_color()) - luminance(line_b.get_color()))
            assert gap >= MIN_LUMINANCE_GAP, (a, b, line_a.get_color(), line_b.get_color())


def test_five_cosine_impls_and_two_softmax_impls_are_told_apart_in_greyscale(tmp_path: Path) -> None:
    rows = []
    for n, impl in enumerate(COSINE_IMPLS):
        rows += series("cosine", impl, lambda s, n=n: (n + 1) * 1e-3 * s)
    rows += series("softmax", "naive", lambda s: 4e-6 * s * s) + series("softmax", "sdpa", lambda s: 1e-6 * s * s)
    _check_apart(_figure(tmp_path, rows), 7)


def test_the_same_impl_of_four_variants_is_told_apart_in_greyscale(tmp_path: Path) -> None:
    rows = []
    for n, variant in enumerate(("cosine", "linear", "cosformer", "heinsen")):
        for impl in ("chunked", "kernel"):
            rows += series(variant, impl, lambda s, n=n: (n + 1) * 1e-3 * s)
    rows += series("softmax", "sdpa", lambda s: 1e-6 * s * s)
    _check_apart(_figure(tmp_path, rows), 9)


def test_the_impls_of_one_variant_differ_in_hue_not_only_in_shade(tmp_path: Path) -> None:
    rows = []
    for n, impl in enumerate(COSINE_IMPLS):
        rows += series("cosine", impl, lambda s, n=n: (n + 1) * 1e-3 * s)
    rows += series("softmax", "naive", lambda s: 4e-6 * s * s) + series("softmax", "sdpa", lambda s: 1e-6 * s * s)
    lines = _series_lines(_figure(tmp_path, rows))
    cosine = {name: line.get_color() for name, line in lines.items() if name.startswith("cosine:")}
    for (a, colour_a), (b, colour_b) in itertools.combinations(cosine.items(), 2):
        gap = abs(hue(colour_a) - hue(colour_b))
        assert min(gap, 360.0 - gap) >= MIN_HUE_GAP, (a, b, colour_a, colour_b)
    assert len({lines[name].get_marker() for name in cosine}) == len(cosine) == 5


def test_an_impl_looks_the_same_in_every_figure_of_a_run(tmp_path: Path) -> None:
    """The head-dim sweep holds two of the five impls; they keep the colours of the length sweep."""
    rows = []
    for n, impl in enumerate(COSINE_IMPLS):
        rows += series("cosine", impl, lambda s, n=n: (n + 1) * 1e-3 * s, seqs=(1024, 2048, 4096))
    for dim in (32, 128):
        for impl in ("recurrent", "kernel"):
            rows += series("cosine", impl, lambda s, d=dim: 1e-5 * s * d, seqs=(512,), dim_k=dim, dim_v=dim)
    run = read_run(write_run(tmp_path, rows))
    looks: dict[str, set[tuple[str, str]]] = {}
    for _, figure in figures(run):
        for name, line in _series_lines(figure.axes[0]).items():
            looks.setdefault(name, set()).add((line.get_color(), line.get_marker()))
    assert looks.keys() == {f"cosine:{impl}" for impl in COSINE_IMPLS}
    assert all(len(seen) == 1 for seen in looks.values()), looks
