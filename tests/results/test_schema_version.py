"""One reader of meta.json (``read_meta_json``): the store, ``load_run`` and the reports refuse a
broken or newer one with the same words, each in its own exception type (CPU only; small
written runs)."""

from __future__ import annotations

import json
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

import linbench
from linbench.report.load import ReportInputError, read_run
from linbench.results.schema import SCHEMA_VERSION
from linbench.results.schema_version import MetaFileError, read_meta_json
from linbench.results.store import RunStore, RunStoreError

BROKEN = {
    "not JSON": (b'{"command": "linbench run",', "is not valid JSON"),
    "a list": (b"[1, 2]", "holds a JSON list, not the object a run's meta.json is"),
    "not UTF-8": (b'{"x": "\xff\xfe"}', "cannot be read"),
    "newer": (json.dumps({"schema_version": SCHEMA_VERSION + 1}).encode(), f"schema version {SCHEMA_VERSION + 1};"),
}
READERS: dict[str, tuple[Callable[[Path], Any], type[Exception]]] = {
    "the store": (lambda folder: RunStore.open(folder), RunStoreError),
    "load_run": (linbench.load_run, ValueError),
    "the reports": (read_run, ReportInputError),
}


@pytest.mark.parametrize("reader", READERS)
@pytest.mark.parametrize("broken", BROKEN)
def test_every_reader_refuses_a_broken_meta_json_in_the_same_words(tmp_path: Path, broken: str, reader: str) -> None:
    store = RunStore.create(tmp_path, "cosine")
    content, words = BROKEN[broken]
    (store.path / "meta.json").write_bytes(content)
    read, error = READERS[reader]
    with pytest.raises(error) as raised:
        read(store.path)
    assert words in str(raised.value) and "meta.json" in str(raised.value)
    assert "\n" not in str(raised.value)


def test_a_folder_without_meta_json_reads_as_empty_only_where_asked(tmp_path: Path) -> None:
    assert read_meta_json(tmp_path / "meta.json", missing_ok=True) == {}
    with pytest.raises(MetaFileError, match="cannot be read"):
        read_meta_json(tmp_path / "meta.json")


def test_a_meta_json_that_is_a_folder_cannot_be_read(tmp_path: Path) -> None:
    (tmp_path / "meta.json").mkdir()
    with pytest.raises(MetaFileError, match="cannot be read"):
        read_meta_json(tmp_path / "meta.json", missing_ok=True)
