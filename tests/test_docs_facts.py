"""Names, counts and tables the README and docs/ state, checked against the code they describe,
so that they cannot drift from it (no device: reads files and the registries; the suites are
planned, never run)."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from linbench.hybrids import HYBRIDS
from linbench.sweep.presets import PRESETS

ROOT = Path(__file__).parents[1]
PAGES = [ROOT / "README.md", *sorted((ROOT / "docs").glob("*.md"))]


def _text(page: str) -> str:
    return (ROOT / page).read_text()


def _table_rows(text: str, header: str) -> list[list[str]]:
    """The cells of each body row of the table whose header line is ``header``."""
    table = (header + text.split(header, 1)[1]).split("\n\n", 1)[0]
    rows = re.findall(r"^\|(.+)\|$", table, re.MULTILINE)
    return [[cell.strip() for cell in row.split("|")] for row in rows[2:]]  # past the header and its rule


def test_every_preset_a_page_names_is_one() -> None:
    named = {
        (page.name, name.rstrip(".,"))
        for page in PAGES
        for name in re.findall(r"--preset ([a-z0-9][a-z0-9._-]*)", page.read_text())
    }
    unknown = sorted((page, name) for page, name in named if name not in PRESETS and name not in HYBRIDS)
    assert not unknown, f"pages name presets that do not exist: {unknown}"


def test_the_readme_lists_every_hybrid_preset_by_its_name() -> None:
    text = " ".join(_text("README.md").split())
    listed = re.search(r"`--preset (\S+)` \(and ([^)]*)\) runs both layer kinds", text)
    assert listed is not None
    names = [listed.group(1)] + [name.strip() for name in listed.group(2).split(",")]
    assert sorted(names) == sorted(HYBRIDS)


def test_run_md_s_preset_tables_are_the_presets() -> None:
    text = _text("docs/run.md")
    softmax = _table_rows(text, "| preset | heads | kv heads | dim | lengths | source |\n")
    assert [row[0].strip("`") for row in softmax] == list(PRESETS)
    for name, heads, kv_heads, dim, lengths, _ in softmax:
        preset = PRESETS[name.strip("`")]
        assert (int(heads), int(kv_heads), int(dim), lengths) == (
            preset.heads,
            preset.kv_heads,
            preset.dim,
            preset.lengths,
        )
    hybrid = _table_rows(text, "| preset | linear layers | softmax layers |\n")
    assert [row[0].strip("`") for row in hybrid] == list(HYBRIDS)
    for name, linear, softmax_layers in hybrid:
        model = HYBRIDS[name.strip("`")]
        assert linear.startswith(f"{model.linear.layers} × ") and softmax_layers.startswith(
            f"{model.softmax.layers} × "
        )


@pytest.mark.parametrize("page", PAGES, ids=lambda page: page.name)
def test_no_run_or_decode_command_of_a_page_uses_a_deprecated_spelling(page: Path) -> None:
    commands = re.findall(r"linbench (?:run|decode) [^`\n]*(?:\n[^`\n]*){0,2}", page.read_text())
    old = [command for command in commands if re.search(r"--(?:no-)?baseline\b", command)]
    assert not old, f"{page.name}: --baseline is --against on run and decode: {old}"


def test_suites_md_s_table_is_linbench_suites() -> None:
    """Every suite file has a row, with its command and the point count ``linbench suites`` gives."""
    from linbench.cli.suites_cmd import describe_suite

    rows = _table_rows(_text("docs/suites.md"), "| suite | command | reproduces | points |\n")
    table = {name.strip("`"): (command, int(points)) for name, command, _, points in rows}
    found = {info.name: (info.command, info.points) for info in map(describe_suite, (ROOT / "suites").glob("*.toml"))}
    assert table == found


@pytest.mark.parametrize(
    ("page", "said", "suite"),
    [
        (
            "docs/ci.md",
            r"against SDPA, at 256 and 512 tokens, but for linear:kernel and SDPA, at 256 only: (\d+) points",
            "gate-cpu",
        ),
        ("README.md", r"every csrc kernel at 256 and 512 tokens \((\d+) points: linear:kernel and SDPA", "gate-cpu"),
        ("docs/ci.md", r"`suites/gate-decode-cpu.toml` holds (\d+) serving points", "gate-decode-cpu"),
        ("docs/decode.md", r"fp32 and bf16 states: (\d+) points", "gate-decode-cpu"),
    ],
)
def test_a_suite_s_point_count_in_the_prose_is_the_planner_s(page: str, said: str, suite: str) -> None:
    from linbench.cli.suites_cmd import describe_suite

    found = re.search(said, " ".join(_text(page).split()))
    assert found is not None, f"{page} no longer says {said!r}: update this test with the page"
    assert int(found.group(1)) == describe_suite(ROOT / "suites" / f"{suite}.toml").points


def test_the_count_of_gated_families_is_the_packages() -> None:
    words = {5: "five", 6: "six", 7: "seven", 8: "eight", 9: "nine", 10: "ten"}
    families = sorted(p.parent.name for p in (ROOT / "linbench" / "variants" / "gated").glob("*/__init__.py"))
    said = {
        page: re.findall(r"\b(\w+) causal variants whose", _text(page))
        for page in ("docs/variants.md", "linbench/variants/gated/README.md")
    }
    assert all(found == [words[len(families)].capitalize()] for found in said.values()), (families, said)
    rows = _table_rows(_text("docs/variants.md"), "| variant | state update | extra inputs | paper |\n")
    assert len(rows) == len(families)


def test_gate_md_s_summary_names_every_statistic_the_gate_judges() -> None:
    from linbench.gate.statistic import COLUMN

    summary = _text("docs/gate.md").split("## In short\n", 1)[1].split("\n## ", 1)[0]
    assert all(f"`{column}`" in summary for column in COLUMN.values()), sorted(COLUMN.values())


def test_samples_csv_is_keyed_as_results_md_says() -> None:
    from linbench.results.schema import KEY_COLUMNS, SAMPLE_COLUMNS

    assert (*KEY_COLUMNS, "process", "time_ms") == SAMPLE_COLUMNS
    said = " ".join(_text("docs/results.md").split())
    assert "`samples.csv` has the key columns (every file's, as [results-columns.md](results-columns.md)" in said


def test_python_api_md_s_request_table_has_every_field() -> None:
    import dataclasses

    from linbench.sweep.request import SweepRequest

    rows = _table_rows(_text("docs/python-api.md"), "| field | option | type |\n")
    listed = {name for row in rows for name in re.findall(r"`([a-z_]+)`", row[0])}
    assert listed == {field.name for field in dataclasses.fields(SweepRequest)}


def test_contributing_md_s_contracts_name_the_rooms_pyproject_s_do() -> None:
    """Each forbidden contract of pyproject.toml has a row, and a row that opens with rooms names
    exactly the contract's source rooms."""
    try:
        import tomllib
    except ImportError:  # Python 3.10: the tomli linbench depends on there
        import tomli as tomllib  # type: ignore[no-redef]

    contracts = tomllib.loads(_text("pyproject.toml"))["tool"]["importlinter"]["contracts"]
    forbidden = {
        c["id"]: {m.removeprefix("linbench.") for m in c["source_modules"]}
        for c in contracts
        if c["type"] == "forbidden"
    }
    rows = {
        row[0].strip("`"): row[1]
        for row in _table_rows(_text("docs/contributing.md"), "| contract | what it keeps apart |\n")
    }
    assert set(rows) == set(forbidden)
    for contract, words in rows.items():
        opening = re.match(r"((?:`[a-z_]+`(?:, | and )?)+) ", words)
        if opening is not None:
            assert set(re.findall(r"`([a-z_]+)`", opening.group(1))) == forbidden[contract], contract


@pytest.mark.parametrize(
    ("command", "page", "opening"),
    [
        ("run", "docs/suites.md", "Top-level keys of a `run` suite:"),
        ("decode", "docs/decode.md", 'Suites say `command = "decode"`'),
    ],
)
def test_the_suite_keys_a_page_lists_are_those_the_planner_takes(command: str, page: str, opening: str) -> None:
    """The paragraph that lists a command's suite keys names each key the suite reader takes
    (sweep/settings.py TOP_KEYS), so a new key cannot go undocumented."""
    from linbench.sweep.settings import TOP_KEYS

    paragraph = _text(page).split(opening, 1)[1].split("\n\n", 1)[0]
    if command == "decode":  # its serving keys are listed in the next item of the same list
        paragraph += _text(page).split("The serving options", 1)[1].split("\n- ", 1)[0]
    named = set(re.findall(r"`([a-z_]+)`", paragraph))
    assert set(TOP_KEYS[command]) <= named, sorted(set(TOP_KEYS[command]) - named)


def test_history_md_names_every_column_a_budget_point_can_match() -> None:
    from linbench.history.budget import NAMES

    said = " ".join(
        _text("docs/history.md")
        .split("A `[[point]]` names a point by any of the columns of its key", 1)[1]
        .split(";", 1)[0]
        .split()
    )
    assert set(re.findall(r"`([a-z_]+)`", said)) == set(NAMES)


def test_python_api_md_lists_every_name_linbench_exports() -> None:
    import linbench

    exports = _text("docs/python-api.md").split("## What `linbench` exports\n", 1)[1].split("\n## ", 1)[0]
    named = set(re.findall(r"`(?:linbench\.)?([A-Za-z_]+)`", exports))
    assert set(linbench.__all__) - {"__version__"} <= named, sorted(set(linbench.__all__) - named)


def test_plugins_md_s_impl_table_has_every_field() -> None:
    import dataclasses

    from linbench.variants.declarations import Impl

    rows = _table_rows(_text("docs/plugins.md").split("\n## Impl\n", 1)[1], "| field | what it is |\n")
    listed = {name for row in rows for name in re.findall(r"`([a-z_]+)`", row[0])}
    assert listed == {field.name for field in dataclasses.fields(Impl)}
