"""The figure of a pack run: each impl's real tokens per second, packed against padded, with
the padded batch's padding waste, from run folders written here."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
from synthetic_runs import failed, series, write_run
from typer.testing import CliRunner

from linbench.cli import app
from linbench.report.load import read_run
from linbench.report.plot import plot_run
from linbench.report.plot_pack import pack_figures
from linbench.report.roofline import roofline_tables

PACK = "file:lengths.txt#abc@1024"
TOKENS = 1024
LONGEST = 512
WASTE = 0.5  # 4 sequences padded to 512: 1024 real tokens of 2048


def _point(variant: str, impl: str, packing: str, ms: float, **extra: Any) -> dict[str, Any]:
    batch, seq = (1, TOKENS) if packing == "packed" else (4, LONGEST)
    (row,) = series(variant, impl, lambda s: ms, seqs=(seq,), batch=batch)
    waste = WASTE if packing == "padded" else 0.0
    row.update(pack=PACK, packing=packing, sequences=4, padding_waste=waste, tokens_per_s=TOKENS / (ms * 1e-3))
    return row | extra


def _run(tmp_path: Path) -> Path:
    rows = [
        _point("gated-deltanet", "chunked", "packed", 10.0),
        _point("gated-deltanet", "chunked", "padded", 40.0, oversubscribed=True),
        _point("softmax", "naive", "packed", 20.0),
    ]
    padded_failure = failed("softmax", "naive", LONGEST, "oom")
    padded_failure.update(batch=4, pack=PACK, packing="padded", sequences=4, padding_waste=WASTE)
    return write_run(tmp_path / "run", [*rows, padded_failure], baselines=["softmax:naive"])


def test_a_pack_run_gets_one_figure_of_tokens_per_second_packed_against_padded(tmp_path: Path) -> None:
    run = read_run(_run(tmp_path))
    ((stem, figure),) = pack_figures(run.results)
    assert stem == "pack-throughput_fp32_fwd_causal_H8_D64_T1024"
    ax = figure.axes[0]
    assert [t.get_text() for t in ax.get_yticklabels()] == ["gated-deltanet:chunked", "softmax:naive"]
    widths = sorted(bar.get_width() for bar in ax.patches)
    assert widths == pytest.approx(sorted([TOKENS / 0.010, TOKENS / 0.040, TOKENS / 0.020]))
    assert ax.get_xscale() == "linear" and ax.get_xlim()[0] == 0  # a bar's length is its rate
    texts = [t.get_text() for t in ax.texts]
    assert " 25.6k tokens/s, 50% padding" in texts  # the padded bar says how much was padding
    assert " 102k tokens/s" in texts
    assert " padded: oom" in texts  # a point that did not end ok has no bar
    hatched = [bar for bar in ax.patches if bar.get_hatch()]
    assert [bar.get_width() for bar in hatched] == pytest.approx([TOKENS / 0.040])  # measured oversubscribed
    assert "4 sequences, 50% of a padded batch is padding" in ax.get_title(loc="left")


def test_plot_draws_a_pack_run_instead_of_saying_nothing_to_plot(tmp_path: Path) -> None:
    folder = _run(tmp_path)
    result = CliRunner().invoke(app, ["plot", str(folder)])
    assert result.exit_code == 0, result.output
    assert "1 figure(s)" in result.output and "nothing to plot" not in result.output
    assert (folder / "plots" / "pack-throughput_fp32_fwd_causal_H8_D64_T1024.png").is_file()


def test_a_run_without_a_pack_gets_no_pack_figure(tmp_path: Path) -> None:
    folder = write_run(tmp_path / "run", series("cosine", "chunked", lambda s: 0.01 * s))
    written = plot_run(read_run(folder), tmp_path / "plots")
    assert written and not any(path.name.startswith("pack-") for path in written)


def test_the_report_s_shapes_say_packed_or_padded(tmp_path: Path) -> None:
    run = read_run(_run(tmp_path))
    run.meta["ceilings"] = {"copy_gb_per_s": 10.0, "matmul_tflops": {"fp32": 0.1}}
    (table,) = roofline_tables(run)
    shapes = [row[3] for row in table.rows]
    assert "B1 H8 S1k D64 packed" in shapes and "B4 H8 S512 D64 padded" in shapes
