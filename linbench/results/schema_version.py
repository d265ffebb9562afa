"""The schema version a run folder's meta.json says it was written with, checked on read.

Every run writes ``schema_version`` (schema.py's SCHEMA_VERSION) into meta.json. A reader
knows the columns of its own version and every earlier one (an older run is read with the
defaults schema.py keeps for the columns it lacks: KEY_DEFAULTS, the optional result
columns), but not those of a later one: a run written by a newer linbench is refused, in one
line naming both versions, rather than read as if it were known. A meta.json that records no
version (a folder from before it was written, or made by hand) is read as an older run.

``read_meta_json`` is the one reader of a meta.json: the store, ``load_run`` and the reports
each call it and put its error into their own exception type.
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from linbench.results.schema import SCHEMA_VERSION

__all__ = ["MetaFileError", "NewerSchemaError", "check_schema_version", "read_meta_json"]


class NewerSchemaError(ValueError):
    """A run folder written under a schema version newer than this linbench reads."""


class MetaFileError(ValueError):
    """A meta.json that cannot be read, is not JSON, or holds something other than an object."""


def check_schema_version(meta: Mapping[str, Any], where: str) -> None:
    """NewerSchemaError when ``meta`` (meta.json at ``where``) records a ``schema_version``
    above SCHEMA_VERSION, or one that is not a whole number."""
    if not isinstance(meta, Mapping):
        return  # not a meta.json linbench wrote: its readers say what is wrong with it
    version = meta.get("schema_version")
    if version is None:
        return
    if isinstance(version, bool) or not isinstance(version, int):
        raise NewerSchemaError(f"{where!r} records schema_version {version!r}, not a whole number")
    if version > SCHEMA_VERSION:
        raise NewerSchemaError(
            f"{where!r} was written with results schema version {version}; this linbench reads schema "
            f"versions up to {SCHEMA_VERSION}: read it with a newer linbench"
        )


def read_meta_json(path: Path, *, missing_ok: bool = False) -> dict[str, Any]:
    """The meta.json at ``path``, version-checked ({} where there is none and ``missing_ok``).
    MetaFileError when it cannot be read, is not JSON or is not an object (a run's meta.json is
    one; anything else is not linbench's); NewerSchemaError when a newer linbench wrote it."""
    if missing_ok and not path.exists():
        return {}
    try:
        meta = json.loads(path.read_text())
    except (OSError, UnicodeDecodeError) as exc:
        raise MetaFileError(f"{str(path)!r} cannot be read: {exc}") from None
    except json.JSONDecodeError as exc:
        raise MetaFileError(f"{str(path)!r} is not valid JSON: {exc}") from None
    if not isinstance(meta, dict):
        raise MetaFileError(f"{str(path)!r} holds a JSON {type(meta).__name__}, not the object a run's meta.json is")
    check_schema_version(meta, str(path))
    return meta
