"""What a new user meets: exit statuses that tell a failed sweep from a
finished one, and bad input or a full disk reported in one line, never a traceback.
CPU only (each run says --device cpu)."""

from __future__ import annotations

import csv
import errno
import json
import os
from pathlib import Path

import pytest
from cli_helpers import Invoke, assert_usage_error

PLANTED_FILE = Path(__file__).parents[1] / "plugins" / "planted.py"
SMALL = ("--heads", "2", "--dim", "16", "--budget-s", "0.05", "--warmup-s", "0", "--device", "cpu")
TINY = ("--seq", "64", *SMALL)
TINY_DECODE = ("--context", "64", "--tokens", "2", "--heads", "2", "--dim", "16", "--device", "cpu")


def statuses(out: Path) -> set[tuple[str, str]]:
    (folder,) = out.iterdir()
    with (folder / "results.csv").open() as handle:
        return {(row["impl"], row["status"]) for row in csv.DictReader(handle)}


def test_run_exits_1_when_a_point_fails_and_says_so(invoke: Invoke, tmp_path: Path) -> None:
    args = ("run", "--plugin", PLANTED_FILE, "--variant", "planted:good,planted:wrong", "--no-against", *TINY)
    result = invoke(*args, "--out", tmp_path, "--quiet")
    assert result.exit_code == 1, result.output
    assert statuses(tmp_path) == {("good", "ok"), ("wrong", "mismatch")}
    summary = result.stdout.strip().splitlines()[-1]
    assert "1 mismatch" in summary and "1 point(s) failed" in summary and "planted:wrong" in summary
    assert "exit 1" in summary and "--allow-failures" in summary
    assert "Traceback" not in result.output


def test_allow_failures_exits_0_anyway(invoke: Invoke, tmp_path: Path) -> None:
    args = ("run", "--plugin", PLANTED_FILE, "--variant", "planted:wrong", "--no-against", *TINY)
    result = invoke(*args, "--out", tmp_path, "--quiet", "--allow-failures")
    assert result.exit_code == 0, result.output
    assert "exit 0 (--allow-failures)" in result.stdout


def test_oom_and_timeout_are_the_sweep_s_reach_and_exit_0(invoke: Invoke, tmp_path: Path) -> None:
    args = ("run", "--plugin", PLANTED_FILE, "--variant", "planted:oom,planted:hang", "--no-against", *SMALL)
    result = invoke(*args, "--seq", "512", "--timeout-s", "2", "--out", tmp_path, "--quiet")
    assert statuses(tmp_path) == {("oom", "oom"), ("hang", "timeout")}
    assert result.exit_code == 0, result.output
    assert "failed" not in result.stdout


def test_decode_exits_1_when_a_decoder_fails(invoke: Invoke, tmp_path: Path) -> None:
    args = ("decode", "--plugin", PLANTED_FILE, "--variant", "planted:good,planted:wrong", "--no-against")
    result = invoke(*args, *TINY_DECODE, "--out", tmp_path, "--quiet")
    assert result.exit_code == 1, result.output
    assert statuses(tmp_path) == {("good", "ok"), ("wrong", "mismatch")}
    allowed = invoke(*args, *TINY_DECODE, "--out", tmp_path / "again", "--quiet", "--allow-failures")
    assert allowed.exit_code == 0, allowed.output


# --- a full disk, a read-only file system, a broken folder: one line, exit 2, nothing lost ---


def test_a_full_disk_mid_run_is_one_line_and_the_folder_resumes(
    invoke: Invoke, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    from linbench.results import store

    real_append = store._append_text
    calls = {"results": 0}

    def disk_fills_at_the_second_row(path: Path, text: str) -> None:
        if path.name == "results.csv":
            calls["results"] += 1
            if calls["results"] == 2:  # half the row lands, then the disk is full
                real_append(path, text[: len(text) // 2])
                raise store.RunStoreWriteError(path, OSError(errno.ENOSPC, os.strerror(errno.ENOSPC)))
        real_append(path, text)

    monkeypatch.setattr(store, "_append_text", disk_fills_at_the_second_row)
    args = ("run", "--variant", "cosine:chunked", "--no-against", "--seq", "64,128,256", *SMALL)
    result = invoke(*args, "--out", tmp_path, "--quiet")
    assert_usage_error(result, "results.csv", "No space left on device", "--resume")
    (folder,) = tmp_path.iterdir()
    assert json.loads((folder / "meta.json").read_text())["status"] == "interrupted"
    assert not list(folder.glob("*.tmp"))
    monkeypatch.undo()
    resumed = invoke("run", "--resume", folder, "--quiet")
    assert resumed.exit_code == 0, resumed.output
    with (folder / "results.csv").open() as handle:
        rows = list(csv.DictReader(handle))
    assert sorted(int(row["seq"]) for row in rows) == [64, 128, 256]
    assert {row["status"] for row in rows} == {"ok"}


def test_a_full_disk_when_meta_json_is_first_written_leaves_no_folder(
    invoke: Invoke, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    real_write_text = Path.write_text

    def full(self: Path, data: str, *args: object, **kwargs: object) -> int:
        if self.name == "meta.json.tmp":
            real_write_text(self, "")  # what a full disk leaves: the file, empty
            raise OSError(errno.ENOSPC, os.strerror(errno.ENOSPC), str(self))
        return real_write_text(self, data, *args, **kwargs)

    monkeypatch.setattr(Path, "write_text", full)
    out = tmp_path / "out"
    result = invoke("run", "--variant", "cosine:chunked", "--no-against", *TINY, "--out", out)
    assert_usage_error(result, "meta.json", "No space left on device", "no run folder was made")
    assert not out.exists() or not list(out.iterdir())


def test_meta_json_is_replaced_atomically_and_a_failed_write_leaves_no_tmp(tmp_path: Path) -> None:
    from linbench.results.store import RunStore, RunStoreWriteError

    run = RunStore.create(tmp_path, "x")
    run.write_meta({"status": "running"})
    (run.path / "meta.json.tmp").symlink_to("/dev/full")  # every write there fails with ENOSPC
    with pytest.raises(RunStoreWriteError, match=r"meta\.json.*No space left on device"):
        run.write_meta({"status": "complete"})
    assert json.loads((run.path / "meta.json").read_text()) == {"status": "running"}
    assert not (run.path / "meta.json.tmp").exists() and not (run.path / "meta.json.tmp").is_symlink()


def test_a_row_written_to_a_full_disk_names_the_file(tmp_path: Path) -> None:
    from result_rows import process_row

    from linbench.results.store import RunStore, RunStoreWriteError

    run = RunStore.create(tmp_path, "x")
    run.samples_path.unlink()
    run.samples_path.symlink_to("/dev/full")
    with pytest.raises(RunStoreWriteError, match=r"samples\.csv.*No space left on device"):
        run.append_process(process_row(256, 0), [1.0])


def test_resume_of_a_folder_without_samples_csv_is_one_line(invoke: Invoke, tmp_path: Path) -> None:
    from linbench.results.store import RunStore

    run = RunStore.create(tmp_path, "x")
    run.write_meta({"command": "linbench run"})
    run.samples_path.unlink()
    before = run.results_path.read_bytes()
    assert_usage_error(invoke("run", "--resume", run.path), "samples.csv")
    assert run.results_path.read_bytes() == before


def plotted_run(folder: Path) -> Path:
    from synthetic_runs import series, write_run

    return write_run(folder, series("cosine", "chunked", lambda s: s / 1e3))


def test_plot_to_a_read_only_file_system_is_one_line(
    invoke: Invoke, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    from linbench.report import plot

    def read_only(run: object, out_dir: Path, formats: object) -> list[Path]:
        raise OSError(errno.EROFS, os.strerror(errno.EROFS), str(out_dir))

    monkeypatch.setattr(plot, "plot_run", read_only)
    result = invoke("plot", plotted_run(tmp_path / "runs"), "--out", tmp_path / "figures")
    assert_usage_error(result, "figures", "Read-only file system")


def test_plot_where_plots_is_a_file_is_one_line(invoke: Invoke, tmp_path: Path) -> None:
    folder = plotted_run(tmp_path)
    (folder / "plots").write_text("not a folder")
    assert_usage_error(invoke("plot", folder), "plots", "is a file, not a folder")
    assert_usage_error(invoke("plot", folder, "--out", "/dev/full"), "/dev/full", "is a file")


@pytest.mark.parametrize(
    ("args", "fragments"),
    [
        (("run", "--device", "cpu", "--no-such-option"), ("No such option: --no-such-option", "linbench run --help")),
        (("compare",), ("Missing argument", "linbench compare --help")),
        (("run", "--device", "cpu", "--timeout-s", "soon"), ("Invalid value for '--timeout-s'",)),
        (("run", "--device", "cpu", "--seq"), ("--seq", "requires an argument")),
        (("nope",), ("No such command 'nope'",)),
    ],
)
def test_typer_s_own_usage_errors_are_linbench_s_one_line(
    invoke: Invoke, args: tuple[str, ...], fragments: tuple[str, ...]
) -> None:
    result = invoke(*args)
    assert_usage_error(result, *fragments)
    assert "╭" not in result.output


def test_the_bare_command_still_shows_its_help(invoke: Invoke) -> None:
    assert "Usage: linbench" in invoke().output


# --- odd input accepted silently: refused in one line before any folder is made ---


@pytest.mark.parametrize(
    ("args", "fragments"),
    [
        (("--seq", "1k..3k"), ("the range 1k..3k in powers of two ends at 2k", "1k..2k", "1k..3k:+1k")),
        (("--seq", "99999999999999999999"), ("S99999999999999999999", "more elements than a tensor can index")),
        (("--seq", "1m", "--batch", "1m"), ("B1048576-H8-S1048576", "inputs q, k and v alone", "no impl can run it")),
        (("--no-against", "--against", "softmax:sdpa"), ("--no-against and --against contradict each other",)),
        (("--variant", "cosine:chunked,,linear"), ("variant", "empty item")),
        (("--seq", "1k,,2k"), ("seq", "empty item")),
        (("--against", "softmax:sdpa,"), ("against", "empty item")),
        (("--dtype", "fp32,,bf16"), ("dtype", "empty item")),
    ],
)
def test_odd_run_input_is_refused_before_any_folder(
    invoke: Invoke, tmp_path: Path, args: tuple[str, ...], fragments: tuple[str, ...]
) -> None:
    out = tmp_path / "out"
    assert_usage_error(invoke("run", *args, "--device", "cpu", "--out", out), *fragments)
    assert not out.exists()


@pytest.mark.parametrize(
    ("args", "fragment"),
    [
        (("run", "--seq", "64", "--seq", "128", "--device", "cpu"), "--seq given 2 times; give it once"),
        (("run", "--seq", "64", "--device", "cpu", "--device", "cpu"), "--device given 2 times"),
        (("decode", "--context", "64", "--context", "1k", "--device", "cpu"), "--context given 2 times"),
        (("list", "--device", "cpu", "--device", "cpu"), "--device given 2 times"),
    ],
)
def test_an_option_that_takes_one_value_given_twice_is_refused(
    invoke: Invoke, tmp_path: Path, args: tuple[str, ...], fragment: str
) -> None:
    """Typer would keep the last value silently; a list of values is one value, comma-separated."""
    out = () if args[0] == "list" else ("--out", tmp_path / "out")
    assert_usage_error(invoke(*args, *out), fragment)
    assert not (tmp_path / "out").exists()


@pytest.mark.parametrize(
    ("args", "fragment"),
    [
        (("compare", "{here}", ""), "CURRENT is an empty path"),
        (("budget", ""), "RUN is an empty path"),
        (("report", ""), "RUNS is an empty path"),
        (("history", "{here}", ""), "PATHS is an empty path"),
        (("history", "--store", "", "{here}"), "--store is an empty path"),
        (("run", "--out", "", "--dry-run", "--device", "cpu"), "--out is an empty path"),
        (("run", "--plugin", "", "--device", "cpu"), "--plugin is an empty path"),
    ],
)
def test_an_empty_path_is_refused_not_read_as_the_current_folder(
    invoke: Invoke, tmp_path: Path, args: tuple[str, ...], fragment: str
) -> None:
    """Defect: '' became Path('.'): compare RUN '' from inside a run folder compared that run."""
    assert_usage_error(invoke(*(arg.format(here=tmp_path) for arg in args)), fragment)


def test_a_repeatable_option_and_a_repeated_flag_are_still_taken(invoke: Invoke, tmp_path: Path) -> None:
    args = ("--variant", "cosine:chunked", "--variant", "cosine:naive", "--no-against", "--seq", "64", "-q", "-q")
    result = invoke("run", *args, "--device", "cpu", "--out", tmp_path, "--dry-run")
    assert result.exit_code == 0, result.output


def test_decode_refuses_a_context_whose_kv_cache_no_device_holds(invoke: Invoke, tmp_path: Path) -> None:
    out = tmp_path / "out"
    args = ("decode", "--context", "1m", "--batch", "1m", "--device", "cpu", "--out", out)
    assert_usage_error(invoke(*args), "softmax:kvcache", "keys and values", "drop the decoder")
    assert not out.exists()
    recurrent = invoke(*args, "--variant", "cosine:recurrent", "--no-against", "--dry-run")
    assert recurrent.exit_code == 0, recurrent.output  # its state does not grow with the context


def test_check_refuses_empty_list_items_too(invoke: Invoke) -> None:
    assert_usage_error(invoke("check", "--variant", "cosine:chunked,,linear", "--device", "cpu"), "empty item")


def test_a_sweep_past_2000_points_needs_yes_and_dry_run_prints_the_plan(invoke: Invoke, tmp_path: Path) -> None:
    out = tmp_path / "out"
    args = ("run", "--variant", "cosine:chunked", "--no-against", "--seq", "16..32k:+16", "--device", "cpu")
    assert_usage_error(invoke(*args, "--out", out), "2048 points (more than 2000)", "--yes", "--dry-run")
    plan = invoke(*args, "--out", out, "--dry-run")
    assert plan.exit_code == 0, plan.output
    assert "points: 2048 of 2048" in plan.stdout and "impls: cosine:chunked" in plan.stdout
    assert "estimated time: about" in plan.stdout and "runs only with --yes" in plan.stdout
    assert not out.exists()


def test_a_sweep_past_2_hours_by_the_estimate_needs_yes(invoke: Invoke, tmp_path: Path) -> None:
    out = tmp_path / "out"
    # 1875 points under 2000, but each spends 5 s of timed repetitions
    args = ("run", "--variant", "cosine:chunked", "--no-against", "--seq", "16..30000:+16", "--budget-s", "5")
    assert_usage_error(invoke(*args, "--device", "cpu", "--out", out), "h by a rough estimate (more than 2 h)")
    assert not out.exists()


def test_yes_runs_a_sweep_past_the_limit(invoke: Invoke, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    from linbench.sweep import estimate

    monkeypatch.setattr(estimate, "MAX_POINTS", 1)
    args = ("run", "--variant", "cosine:chunked", "--no-against", "--seq", "64,128", *SMALL, "--quiet")
    assert_usage_error(invoke(*args, "--out", tmp_path / "refused"), "2 points (more than 1)")
    result = invoke(*args, "--out", tmp_path / "ran", "--yes")
    assert result.exit_code == 0, result.output
    assert statuses(tmp_path / "ran") == {("chunked", "ok")}
    assert "about" in result.stdout.splitlines()[0]  # the estimate is announced with the plan


def test_dry_run_of_a_resume_lists_the_missing_points_and_changes_nothing(invoke: Invoke, tmp_path: Path) -> None:
    args = ("run", "--variant", "cosine:chunked", "--no-against", "--seq", "64,128", *SMALL, "--quiet")
    assert invoke(*args, "--out", tmp_path).exit_code == 0
    (folder,) = tmp_path.iterdir()
    lines = (folder / "results.csv").read_text().splitlines(keepends=True)
    (folder / "results.csv").write_text("".join(lines[:2]) + lines[2][:10])  # one row and a torn line
    before = {path.name: path.read_bytes() for path in folder.iterdir()}
    plan = invoke("run", "--resume", folder, "--dry-run")
    assert plan.exit_code == 0, plan.output
    assert "points: 1 of 2" in plan.stdout and str(folder) in plan.stdout
    assert {path.name: path.read_bytes() for path in folder.iterdir()} == before


# --- suites: named as listed, and one broken file does not hide the others ---

SUITES = Path(__file__).parents[2] / "suites"


@pytest.mark.parametrize("name", ["ci-cpu", "ci-cpu.toml"])
def test_a_suite_is_named_as_linbench_suites_lists_it(
    invoke: Invoke, tmp_path: Path, monkeypatch: pytest.MonkeyPatch, name: str
) -> None:
    monkeypatch.chdir(tmp_path)  # no ./suites here: the name is found among linbench's own suites
    result = invoke("run", "--suite", name, "--device", "cpu", "--dry-run")
    assert result.exit_code == 0, result.output
    assert "points: 48 of 48" in result.stdout and "-ci-cpu" in result.stdout


def test_a_name_found_nowhere_lists_the_suites(invoke: Invoke) -> None:
    assert_usage_error(invoke("run", "--suite", "ci-cpux", "--device", "cpu"), "'ci-cpux' does not exist", "ci-cpu")
    result = invoke("decode", "--suite", "ci-cpu", "--device", "cpu")
    assert_usage_error(result, "is a run suite", "linbench run --suite")


def test_suites_lists_the_readable_suites_and_marks_a_broken_one(invoke: Invoke, tmp_path: Path) -> None:
    (tmp_path / "ci-cpu.toml").write_text((SUITES / "ci-cpu.toml").read_text())
    (tmp_path / "broken.toml").write_text("seq = [1k")
    (tmp_path / "typo.toml").write_text('variant = ["nope:chunked"]\n')
    result = invoke("suites", tmp_path)
    assert result.exit_code == 0, result.output
    lines = [line for line in result.stdout.splitlines() if line.count("│") == 5]
    rows = {line.split("│")[1].strip(): line for line in lines if line.split("│")[1].strip()}  # not a wrapped cell's
    assert set(rows) == {"broken", "ci-cpu", "typo"}
    assert "48" in rows["ci-cpu"]
    assert "broken: is not valid TOML" in rows["broken"] and "broken: unknown variant 'nope'" in rows["typo"]
    assert "2 suite(s) cannot be read: broken.toml, typo.toml" in result.stdout
