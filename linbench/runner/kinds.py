"""Which kind a sweep's points are: resolved once, from its command and its pack.

``KINDS`` holds one kind per command: ``run`` (runner/run_kind.py) and ``decode``
(runner/decode_kind.py). A run of a pack (``run --pack``) is a ``PackKind``
(runner/pack_kind.py), a run kind made for that pack, since its calls and rows are the
pack's: ``kind_of`` makes it. Every kind a sweep can have comes from ``kind_of``; what a kind
supplies is runner/kind_protocol.py's ``Kind``.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from linbench.results.kinds import row_kind
from linbench.runner.decode_kind import DECODE
from linbench.runner.kind_protocol import Kind
from linbench.runner.pack_kind import PackKind
from linbench.runner.run_kind import RUN

if TYPE_CHECKING:
    from linbench.sweep.lengths import Pack

__all__ = ["DECODE", "KINDS", "RUN", "kind_of", "kind_of_mode"]

KINDS: dict[str, Kind] = {kind.name: kind for kind in (RUN, DECODE)}


def kind_of(command: str, pack: Pack | None = None) -> Kind:
    """The kind of point ``command`` (run, decode) measures; a run of ``pack`` is a PackKind."""
    return KINDS[command] if pack is None else PackKind(pack=pack)


def kind_of_mode(mode: str) -> Kind:
    """The kind of point a row of ``mode`` is (a run's fwd, bwd or fwdbwd; decode)."""
    return KINDS[row_kind(mode).name]
