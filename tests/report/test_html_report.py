"""``linbench report --format html``: one self-contained page with the run's results first
(load said once, headline, tables, the roofline, figures), then its metadata, fits and load
samples."""

from __future__ import annotations

import json
from html.parser import HTMLParser
from pathlib import Path

import pytest
from synthetic_runs import failed, kimi_tp4_serving_rows, series, write_preset_run, write_run
from typer.testing import CliRunner

from linbench.cli import app
from linbench.report.analysis import analyse
from linbench.report.html_report import html_report
from linbench.report.load import read_run
from linbench.results.store import META_FILE

VOID = {"meta", "img", "br", "hr", "link", "input"}


class _Page(HTMLParser):
    """Tags, open/close balance, the images and every external reference of a page."""

    def __init__(self) -> None:
        super().__init__()
        self.stack: list[str] = []
        self.unbalanced: list[str] = []
        self.images: list[str] = []
        self.external: list[str] = []
        self.text: list[str] = []

    def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        values = dict(attrs)
        if tag == "img":
            self.images.append(values.get("src") or "")
        for name in ("src", "href"):
            ref = values.get(name) or ""
            if ref and not ref.startswith(("data:", "#")):
                self.external.append(ref)
        if tag not in VOID:
            self.stack.append(tag)

    def handle_endtag(self, tag: str) -> None:
        if not self.stack or self.stack.pop() != tag:
            self.unbalanced.append(tag)

    def handle_data(self, data: str) -> None:
        self.text.append(data)


def _parsed(page: str) -> _Page:
    parser = _Page()
    parser.feed(page)
    assert parser.unbalanced == [] and parser.stack == [], (parser.unbalanced, parser.stack)
    return parser


def _run_dir(tmp_path: Path, load: object = None) -> Path:
    rows = series("cosine", "chunked", lambda s: 0.01 * s) + series(
        "cosine", "kernel", lambda s: 0.004 * s, seqs=(1024, 2048)
    )
    rows += series("softmax", "sdpa", lambda s: 4e-6 * s * s, seqs=(1024, 2048, 4096, 8192))
    rows += [failed("softmax", "sdpa", 16384, "oom")]
    folder = write_run(tmp_path, rows)
    meta = json.loads((folder / META_FILE).read_text())
    meta.update(device="cpu", device_name="Test CPU", torch="2.13.0", python="3.11.7", status="complete",
                timing={"warmup_s": 0.2, "budget_s": 1.0, "min_reps": 3, "max_reps": 100})  # fmt: skip
    if load is not None:
        meta["load"] = load
    (folder / META_FILE).write_text(json.dumps(meta))
    return folder


def test_the_page_holds_metadata_tables_fits_and_every_figure_embedded(tmp_path: Path) -> None:
    run = read_run(_run_dir(tmp_path))
    page = html_report([run], [analyse(run)])
    parsed = _parsed(page)
    text = " ".join(parsed.text)
    assert parsed.external == []  # self-contained: nothing fetched
    assert len(parsed.images) == 4 and all(src.startswith("data:image/png;base64,iVBOR") for src in parsed.images)
    for fragment in ("synthetic", "Test CPU", "torch 2.13.0", "warm-up 0.2 s", "complete", "not recorded"):
        assert fragment in text, fragment
    assert "Scaling in sequence length" in text and "softmax:sdpa" in text
    assert "R² 1.000, 5 points" in text and "2 points only" in text  # the fits' quality
    assert "Every fit" in text and "power law" in text
    assert "<sup>1.00</sup>" in page


# meta.json's load section as linbench's runner records it: samples of the load average and of
# other busy processes, each with the reasons it found the machine busy.
RECORDED_LOAD = {
    "rule": "busy when the 1-minute load average is above the core count, ...",
    "cores": 2,
    "linbench_threads": 2,
    "busy": True,
    "samples": [
        {"when": "start", "at": "2026-11-22T10:00:00+00:00", "load_avg": [0.5, 0.4, 0.3], "busy_processes": [],
         "busy": []},
        {"when": "during", "at": "2026-11-22T10:00:10+00:00", "load_avg": [3.1, 1.2, 0.6],
         "busy_processes": [{"pid": 4242, "name": "stress", "cpu_percent": 98.0}],
         "busy": ["load average 3.10 on 2 cores", "stress (pid 4242) at 98% CPU"]},
    ],
}  # fmt: skip


@pytest.mark.parametrize(
    ("load", "shown"),
    [
        (RECORDED_LOAD, "busy during this run (1 of 2 load samples"),
        ({"warnings": ["load average 7.9 on 2 CPUs while the run ran"], "load_avg": [7.9, 7.1, 6.0]}, "7.9 on 2 CPUs"),
        (["another process held 80% of a CPU"], "80% of a CPU"),
        ("busy", "busy"),
    ],
)
def test_load_warnings_of_meta_json_are_shown(tmp_path: Path, load: object, shown: str) -> None:
    run = read_run(_run_dir(tmp_path, load))
    page = html_report([run], [analyse(run)], figures=False)
    assert page.count('<div class="warning">') == 1 and shown in page  # said once
    assert "not recorded" not in page
    _parsed(page)
    if load is RECORDED_LOAD:  # the worst reading in the box; every sample in the collapsed table
        assert "stress (pid 4242) up to 98% CPU" in page and "load average up to 3.1 on 2 cores" in page
        assert "stress (pid 4242) at 98% CPU" in page and "stress (pid 4242) 98% CPU" in page
        details = page[page.index("<details>") :]
        assert "Load samples" in details and "2026-11-22T10:00:10" in details


def test_a_quiet_load_record_says_so_without_a_warning(tmp_path: Path) -> None:
    quiet = {**RECORDED_LOAD, "busy": False, "samples": [{**RECORDED_LOAD["samples"][0]}]}
    run = read_run(_run_dir(tmp_path, quiet))
    page = html_report([run], [analyse(run)], figures=False)
    assert '<div class="warning">' not in page and "no sample of the 1 found the machine busy" in page


def test_results_come_first_then_the_details_with_the_load_samples_collapsed_at_the_end(tmp_path: Path) -> None:
    """A busy run with ceilings: one load box, the headline, the tables and the roofline table,
    the figures, then the run's metadata and fits, and the samples in a <details> at the end."""
    folder = _run_dir(tmp_path, {**RECORDED_LOAD, "samples": RECORDED_LOAD["samples"] * 6})
    meta = json.loads((folder / META_FILE).read_text())
    meta["ceilings"] = {"device": "cpu", "copy_gb_per_s": 10.0, "matmul_tflops": {"fp32": 2.0}}
    (folder / META_FILE).write_text(json.dumps(meta))
    run = read_run(folder)
    page = html_report([run], [analyse(run)])
    _parsed(page)
    assert page.count('<div class="warning">') == 1 and page.count("<details>") == 1
    assert "busy during this run (6 of 12 load samples" in page
    order = [
        '<div class="warning">',
        "<h3>Headline</h3>",
        "cosine:kernel</b>: faster than softmax:sdpa from ≤ 1k; 2.05x as fast as softmax:sdpa at 2k",
        "Scaling in sequence length",
        "<h3>Against the ceilings</h3>",
        "<caption>Against the ceilings measured at the run",
        "<h3>Figures</h3>",
        "<img",
        "<h3>Details</h3>",
        "warm-up 0.2 s",
        "Every fit",
        "<details><summary>Machine load: 12 samples, 6 of them busy</summary>",
        "Load samples (2 cores",
    ]
    places = [page.find(fragment) for fragment in order]
    assert all(place >= 0 for place in places), dict(zip(order, places, strict=True))
    assert places == sorted(places), dict(zip(order, places, strict=True))
    assert page.rindex("</details>") > page.rindex("Load samples") > page.rindex("<img")


def test_report_format_html_prints_the_page_or_writes_it_to_out(tmp_path: Path) -> None:
    folder = _run_dir(tmp_path / "run")
    runner = CliRunner()
    printed = runner.invoke(app, ["report", str(folder), "--format", "html"])
    assert printed.exit_code == 0, printed.output
    assert printed.stdout.startswith("<!DOCTYPE html>") and "data:image/png;base64," in printed.stdout
    # Every format is printed or written by one function (report_cmd._emit): the page is
    # rendered once here, and the writing shown with a markdown report, which draws no figure.
    target = tmp_path / "report.md"
    written = runner.invoke(app, ["report", str(folder), "--format", "md", "--out", str(target)])
    assert written.exit_code == 0 and written.stdout == "" and "wrote" in written.stderr
    assert target.read_text().startswith("## linbench report: ")
    clash = runner.invoke(app, ["report", str(folder), "--format", "html", "--json"])
    assert clash.exit_code == 2 and "contradict" in clash.stderr
    unknown = runner.invoke(app, ["report", str(folder), "--format", "pdf"])
    assert unknown.exit_code == 2 and "html" in unknown.stderr
    made = runner.invoke(app, ["report", str(folder), "--format", "md", "--out", str(tmp_path / "new" / "x.md")])
    assert made.exit_code == 0 and (tmp_path / "new" / "x.md").is_file()  # its folder made, as plot's are
    (tmp_path / "a-file").write_text("")
    blocked = runner.invoke(app, ["report", str(folder), "--format", "md", "--out", str(tmp_path / "a-file" / "x.md")])
    assert blocked.exit_code == 2 and "cannot write the report" in blocked.stderr


def test_a_serving_preset_run_s_page_shows_its_capacity_and_model_tables(tmp_path: Path) -> None:
    run = read_run(write_preset_run(tmp_path / "run", kimi_tp4_serving_rows(), "kimi-linear-48b", tp=4))
    page = html_report([run], [analyse(run)], figures=False)
    assert "<h3>Serving capacity and model cost</h3>" in page
    assert "kimi-linear-48b TP4 (20:7)" in page and "kimi-linear-48b model attention cost" in page
