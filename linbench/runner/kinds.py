"""The kinds of point a sweep measures, and everything that differs between them.

A ``run`` point times one attention call (a forward, a backward, or both) over a sequence;
a ``decode`` point prefills a context and times the tokens it generates, one step a call.
The kind is resolved once, from the sweep's command (``kind_of``), and carried on the plan
and on every task: the planner, the skip policy, the estimate and the worker ask their kind
what to do instead of testing the mode. execute.py calls a kind; a kind never calls it back.

What a kind supplies is runner/kind_protocol.py's ``Kind``; ``run`` is runner/run_kind.py and
``decode`` runner/decode_kind.py. A third kind (prefill only, say) is one more class with
those members, listed in ``KINDS``.
"""

from __future__ import annotations

from linbench.runner.decode_kind import DecodeKind
from linbench.runner.kind_protocol import Kind, Work
from linbench.runner.run_kind import RunKind, call_flops

# Kind and Work (runner/kind_protocol.py) and call_flops (runner/run_kind.py) are imported
# from here too, with the kinds themselves.
__all__ = ["DECODE", "KINDS", "RUN", "DecodeKind", "Kind", "RunKind", "Work", "call_flops", "kind_of", "kind_of_mode"]

RUN = RunKind()
DECODE = DecodeKind()
KINDS: dict[str, Kind] = {kind.name: kind for kind in (RUN, DECODE)}


def kind_of(command: str) -> Kind:
    """The kind of point ``command`` (run, decode) measures."""
    return KINDS[command]


def kind_of_mode(mode: str) -> Kind:
    """The kind of point a row of ``mode`` is (a run's fwd, bwd or fwdbwd; decode)."""
    return next((kind for kind in KINDS.values() if mode in kind.modes), RUN)
