"""The column reference of a run folder's CSV files, written from the declarations in schema.py.

    python -m linbench.results.schema_docs docs/results-columns.md   # rewrite the committed page
    python -m linbench.results.schema_docs                           # print it

The page is generated so that it cannot drift from the columns linbench writes:
tests/results/test_schema_docs.py fails when the committed page and the declarations disagree.
"""

from __future__ import annotations

import re
import sys
from pathlib import Path

from linbench.results import schema

COMMAND = "python -m linbench.results.schema_docs docs/results-columns.md"

# Each file of a run folder: its columns and what one row of it is.
FILES = (
    ("results.csv", schema.RESULT_COLUMNS, "one row per point (variant, impl, mode and shape)"),
    ("processes.csv", schema.PROCESS_COLUMNS, "one row per worker process that measured a point"),
    ("samples.csv", schema.SAMPLE_COLUMNS, "one row per timed repetition (per generated token for decode rows)"),
)


# schema.py says what each version changed in one comment line each above SCHEMA_VERSION
# ("# 7: kv_heads and chunk ..." or "# schema 9: ..."); the history is read from there so that
# it is written once, where a column is added.
_HISTORY_LINE = re.compile(r"^# (?:schema )?(\d+): (.+)$", re.MULTILINE | re.IGNORECASE)


def history() -> list[tuple[int, str]]:
    """What each schema version changed, oldest first: (version, change), a version's lines joined."""
    head = Path(schema.__file__).read_text().split("\nSCHEMA_VERSION =", 1)[0]
    changes: dict[int, list[str]] = {}
    for version, change in _HISTORY_LINE.findall(head):
        changes.setdefault(int(version), []).append(change.strip().rstrip("."))
    return [(version, "; ".join(changes[version])) for version in sorted(changes)]


def _code(names: tuple[str, ...]) -> str:
    return ", ".join(f"`{name}`" for name in names)


def _table(columns: tuple[str, ...], required: tuple[str, ...] | None) -> list[str]:
    """A markdown table of ``columns``; with ``required``, a column saying which a reader needs."""
    header = ["column", "kind", "meaning"] + (["required"] if required is not None else [])
    lines = ["| " + " | ".join(header) + " |", "|" + "---|" * len(header)]
    for name in columns:
        column = schema.COLUMNS[name]
        cells = [f"`{name}`", column.kind.__name__, column.doc.replace("|", "\\|")]
        if required is not None:
            cells.append("yes" if name in required else "")
        lines.append("| " + " | ".join(cells) + " |")
    return lines


def render() -> str:
    """The whole page, as docs/results-columns.md holds it."""
    lines = [
        "# Columns of the results files",
        "",
        f"<!-- Generated from linbench/results/schema.py by `{COMMAND}`.",
        "     Edit the declarations there, not this page. -->",
        "",
        "Every column of a run folder's CSV files, as `linbench/results/schema.py` declares it",
        f"(schema version {schema.SCHEMA_VERSION}, recorded in `meta.json` as `schema_version`).",
        "A row written with a column its file does not declare is an error, never an empty cell.",
        "[results.md](results.md) says what each file is for and what the columns mean in more detail.",
        "",
        f"- Key columns, in every file: {_code(schema.KEY_COLUMNS)}.",
        f"- Statuses: {_code(schema.STATUSES)}; decode rows have the mode `{schema.DECODE_MODE}`.",
        "- Kinds: `str` text, `int` a whole number, `float` a number written to 6 significant digits,",
        "  `bool` `True` or `False`; an empty cell is a value that does not apply.",
    ]
    lines += [
        "",
        "## Schema versions",
        "",
        "What each `schema_version` changed (1: results.csv and samples.csv alone).",
        "",
    ]
    lines += [f"- {version}: {change}." for version, change in history()]
    for file, columns, row in FILES:
        required = schema.REQUIRED_RESULT_COLUMNS if file == "results.csv" else None
        lines += ["", f"## {file}", "", f"`{file}` holds {row}: {len(columns)} columns."]
        if required is not None:
            lines.append("`required`: the columns every results.csv has had; later ones may be absent in older runs.")
        lines += ["", *_table(columns, required)]
    return "\n".join(lines) + "\n"


def main(argv: list[str]) -> int:
    """Write the page to the one path given, or print it when none is; exit status 2 on bad usage."""
    if len(argv) > 1 or (argv and argv[0].startswith("-")):
        print("schema_docs: error: give at most one argument: the page to write", file=sys.stderr)
        return 2
    if not argv:
        sys.stdout.write(render())
        return 0
    try:
        Path(argv[0]).write_text(render())
    except OSError as error:
        print(f"schema_docs: error: cannot write {argv[0]}: {error.strerror}", file=sys.stderr)
        return 2
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
