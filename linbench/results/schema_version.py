"""The schema version a run folder's meta.json says it was written with, checked on read.

Every run writes ``schema_version`` (schema.py's SCHEMA_VERSION) into meta.json. A reader
knows the columns of its own version and every earlier one (an older run is read with the
defaults schema.py keeps for the columns it lacks: KEY_DEFAULTS, the optional result
columns), but not those of a later one: a run written by a newer linbench is refused, in one
line naming both versions, rather than read as if it were known. A meta.json that records no
version (a folder from before it was written, or made by hand) is read as an older run.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from linbench.results.schema import SCHEMA_VERSION

__all__ = ["NewerSchemaError", "check_schema_version"]


class NewerSchemaError(ValueError):
    """A run folder written under a schema version newer than this linbench reads."""


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
