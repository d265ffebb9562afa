"""A sweep's pack: the ``pack``, ``lengths_file`` and ``packing`` settings read into the pack
of ``tokens`` tokens the run measures (linbench/sweep/lengths.py draws it) and the ways it runs."""

from __future__ import annotations

from collections.abc import Mapping
from pathlib import Path
from typing import Any

from linbench.sweep.lengths import Pack, PackError, draw_pack, file_pack

PACKINGS = ("packed", "padded")


def read_pack(settings: Mapping[str, Any], budget: int | None) -> Pack | None:
    """The pack ``settings`` ask for (None: none); PackError, one line, for anything wrong."""
    text, path = settings.get("pack"), settings.get("lengths_file")
    if text is None and path is None:
        return None
    if text is not None and path is not None:
        raise PackError("--pack and --lengths-file both give a pack's lengths; give one")
    if budget is None:
        raise PackError("a pack fills a token budget: give --tokens (64k, say) with --pack or --lengths-file")
    if path is not None:
        return file_pack(Path(str(path)), budget)
    return draw_pack(str(text), budget)


def read_packings(value: Any) -> tuple[str, ...]:
    """The ways a pack runs (``packed``, ``padded``), each known; PackError otherwise."""
    items = value if isinstance(value, list | tuple) else [value]
    ways = [part.strip() for item in items for part in str(item).split(",") if part.strip()]
    unknown = [way for way in ways if way not in PACKINGS]
    if unknown or not ways:
        raise PackError(f"packing: {', '.join(map(repr, unknown)) or 'none given'}; choose from {', '.join(PACKINGS)}")
    return tuple(dict.fromkeys(ways))


def pack_settings(settings: Mapping[str, Any], budget: int | None) -> tuple[Pack | None, tuple[str, ...]]:
    """The pack the settings ask for and the ways it runs (none: (None, ()))."""
    pack = read_pack(settings, budget)
    return pack, read_packings(settings.get("packing") or PACKINGS) if pack else ()
