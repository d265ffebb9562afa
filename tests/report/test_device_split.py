"""The report's kernels-and-energy table (CPU; synthetic runs)."""

from __future__ import annotations

from pathlib import Path

from result_rows import result_row
from synthetic_runs import write_run

from linbench.report.analysis import analyse
from linbench.report.device_split import device_split_tables
from linbench.report.html_report import html_report
from linbench.report.load import Run, read_run


def test_a_cpu_run_has_no_table(tmp_path: Path) -> None:
    run = read_run(write_run(tmp_path, [result_row(s, time_ms=s / 1024) for s in (1024, 2048)]))
    assert device_split_tables(run) == []


def _gpu_run(tmp_path: Path) -> Run:
    gpu = {"device": "cuda:0", "backend": "fla-triton chunk_gla", "power_w": 400.0}
    rows = [
        result_row(s, time_ms=s / 1024) | gpu | {"kernel_ms": s / 2048, "energy_j": s / 1e4, "tokens_per_j": 1e4}
        for s in (1024, 4096)
    ]
    return read_run(write_run(tmp_path, rows))


def test_each_series_shows_its_longest_point_s_split_and_energy(tmp_path: Path) -> None:
    (table,) = device_split_tables(_gpu_run(tmp_path))
    (shown,) = table.rows
    cells = dict(zip(table.columns, shown, strict=True))
    assert cells["shape"] == "B1 H8 S4k D64" and cells["backend"] == "fla-triton chunk_gla"
    assert cells["host"].endswith("(50%)")  # 4 ms of which the kernels took 2
    assert (cells["J/call"], cells["W"], cells["tokens/J"]) == ("0.41", "400", "1e+04")


def test_the_html_page_shows_the_table(tmp_path: Path) -> None:
    run = _gpu_run(tmp_path)
    page = html_report([run], [analyse(run)], figures=False)
    assert "<h3>Kernels and energy</h3>" in page and "fla-triton chunk_gla" in page
