"""Every series of a figure can be told apart, in colour and printed in greyscale."""

from __future__ import annotations

import itertools
from pathlib import Path

from matplotlib.colors import to_rgb
from synthetic_runs import series, write_run

from linbench.report.analysis import analyse
from linbench.report.load import read_run
from linbench.report.plot import draw
from linbench.report.plot_parts import metrics
from linbench.report.series import scenarios

COSINE_IMPLS = ("quadratic", "naive", "chunked", "recurrent", "kernel")
# Apart by this much luminance (0..1), two shades stay apart on a greyscale print.
MIN_LUMINANCE_GAP = 0.06


def luminance(colour: str) -> float:
    """The grey a colour prints as (ITU-R 601 luma, what a greyscale conversion keeps)."""
    r, g, b = to_rgb(colour)
    return 0.299 * r + 0.587 * g + 0.114 * b


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
