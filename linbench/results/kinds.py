"""The kinds of row a run folder holds, and what each calls things: one table that the
runner's kinds (runner/kinds.py) and the reading side (report/, cli/, ab/) share, so no
reader re-derives decode against run from a row's columns.

A ``run`` row times one attention call over a sequence (mode fwd, bwd or fwdbwd), its rate
per second; a pack's row (``run --pack``) is a run row. A ``decode`` row times one generated
token after a prefilled context (mode decode: its ``seq`` is the context), its rate per token.
"""

from __future__ import annotations

from dataclasses import dataclass

from linbench.results.record import PER_SECOND, PER_TOKEN
from linbench.results.schema import DECODE_MODE, MODES

__all__ = ["DECODE_ROWS", "ROW_KINDS", "RUN_ROWS", "RowKind", "Words", "row_kind"]


@dataclass(frozen=True)
class Words:
    """What a kind's messages call things."""

    call: str  # one timed call ("stopped after its first call")
    per: str  # what a time is per ("0.5 s per call")
    lengths: str  # its lengths ("fitted to 3 shorter lengths")
    targets: str  # what its names select ("3 impls")
    length: str  # the setting of its length axis (sweep/settings.py), and its column header
    length_label: str  # a length in a line ("S=1k")
    time: str  # the header of its time


@dataclass(frozen=True)
class RowKind:
    """A kind of row: the command that writes it, its modes, its rate and its words."""

    name: str
    modes: tuple[str, ...]
    rate: str  # record.PER_SECOND or PER_TOKEN: what its rows derive from their time
    words: Words


RUN_ROWS = RowKind("run", MODES, PER_SECOND, Words("call", "call", "lengths", "impls", "seq", "S", "time"))
DECODE_ROWS = RowKind(
    "decode",
    (DECODE_MODE,),
    PER_TOKEN,
    Words("step", "token", "contexts", "decoders", "context", "context", "time/token"),
)
ROW_KINDS = {kind.name: kind for kind in (RUN_ROWS, DECODE_ROWS)}


def row_kind(mode: str) -> RowKind:
    """The kind of a row of ``mode`` (a run's fwd, bwd or fwdbwd; decode)."""
    return next((kind for kind in ROW_KINDS.values() if mode in kind.modes), RUN_ROWS)
