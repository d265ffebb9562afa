"""A figure from a run measured on a busy machine says so in its title (CPU)."""

from __future__ import annotations

import json
from pathlib import Path

from synthetic_runs import decode_series, series, write_run

from linbench.report.load import read_run
from linbench.report.plot import figures
from linbench.report.plot_load import busy_line
from linbench.results.store import META_FILE

QUIET = {"when": "start", "load_avg": [0.4, 0.3, 0.2], "busy_processes": [], "busy": []}
LOADED = {"when": "during", "load_avg": [4.62, 2.2, 1.1], "busy": ["load average 4.62 on 2 cores"],
          "busy_processes": [{"pid": 12844, "name": "python", "cpu_percent": 70.0}]}  # fmt: skip
HOGGED = {"when": "end", "load_avg": [1.2, 1.0, 0.9], "busy": ["stress (pid 7) at 98% CPU"],
          "busy_processes": [{"pid": 7, "name": "stress", "cpu_percent": 98.0}]}  # fmt: skip


def _load(*samples: dict) -> dict:
    return {"load": {"cores": 2, "busy": any(s["busy"] for s in samples), "samples": list(samples)}}


def test_the_line_names_the_worst_reading() -> None:
    line = busy_line(_load(QUIET, LOADED, HOGGED))
    assert line == "Busy machine (2 of 3 load samples; load average up to 4.6 on 2 cores): times may be slow"
    assert busy_line(_load(QUIET, HOGGED)) == (
        "Busy machine (1 of 2 load samples; stress (pid 7) up to 98% CPU): times may be slow"
    )
    assert busy_line(_load(QUIET)) is None and busy_line({}) is None


def _titles(figure) -> list[str]:
    suptitle = figure.get_suptitle()
    return [suptitle] if suptitle else [figure.axes[0].get_title(loc="left")]


def _run(tmp_path: Path, load: dict):
    rows = series("cosine", "chunked", lambda s: 0.01 * s) + series("softmax", "sdpa", lambda s: 4e-6 * s * s)
    rows += decode_series("cosine", "recurrent", lambda c: 0.05, lambda c: 131072.0)
    folder = write_run(tmp_path, rows)
    meta = json.loads((folder / META_FILE).read_text()) | load
    (folder / META_FILE).write_text(json.dumps(meta))
    return read_run(folder)


def test_every_figure_of_times_from_a_busy_run_says_so_in_its_title(tmp_path: Path) -> None:
    drawn = dict(figures(_run(tmp_path / "busy", _load(QUIET, LOADED))))
    assert {name.split("_")[0] for name in drawn} == {
        "time-vs-seq", "memory-vs-seq", "throughput-vs-seq", "speedup-vs-seq", "decode-vs-context",
    }  # fmt: skip
    for name, figure in drawn.items():
        (title,) = _titles(figure)
        if name.startswith("memory-vs-seq"):  # a memory figure speaks of memory, not of times
            assert "Busy" not in title and "time" not in title, title
            continue
        assert title.endswith(
            "\nBusy machine (1 of 2 load samples; load average up to 4.6 on 2 cores): times may be slow"
        ), name
    quiet = dict(figures(_run(tmp_path / "quiet", _load(QUIET))))
    assert not any("Busy" in title for figure in quiet.values() for title in _titles(figure))


def test_a_time_fit_from_a_busy_run_says_so_in_its_legend(tmp_path: Path) -> None:
    drawn = dict(figures(_run(tmp_path, _load(QUIET, LOADED))))
    legends = {
        name.split("_")[0]: [t.get_text() for t in figure.axes[0].get_legend().get_texts()]
        for name, figure in drawn.items()
        if name.split("_")[0] in ("time-vs-seq", "memory-vs-seq")
    }
    (chunked_time,) = [text for text in legends["time-vs-seq"] if text.startswith("cosine:chunked  ")]
    (chunked_memory,) = [text for text in legends["memory-vs-seq"] if text.startswith("cosine:chunked  ")]
    assert chunked_time.endswith("(R² 1.000, 5 points; busy machine)")
    assert "busy" not in chunked_memory
