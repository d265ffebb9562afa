"""docs/libraries.md is generated from the library contract rows and must be current (CPU)."""

from __future__ import annotations

from pathlib import Path

from linbench.variants.libraries import CONTRACTS, docs

PAGE = Path(__file__).resolve().parents[2] / "docs" / "libraries.md"


def test_the_page_is_generated_from_the_rows() -> None:
    assert PAGE.read_text(encoding="utf-8") == docs.render(), (
        "docs/libraries.md is stale: python -m linbench.variants.libraries.docs docs/libraries.md"
    )


def test_every_row_names_its_version_and_the_lines_it_was_read_from() -> None:
    for row in CONTRACTS:
        assert row.version and row.read_from, row.name
