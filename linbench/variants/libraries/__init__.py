"""Other kernel libraries' impls (FlashInfer, cuDNN, FlashKDA, cuLA, FlashQLA, FlashAttention):
one ``Contract`` row per impl (contract.py; the rows in gated.py and softmax.py), one generic
wrapper that makes each row an ``Impl`` (wrapper.py), and the docs page generated from the rows
(docs.py, docs/libraries.md)."""

from __future__ import annotations

from linbench.variants.declarations import Impl
from linbench.variants.libraries import gated, softmax
from linbench.variants.libraries.contract import Contract
from linbench.variants.libraries.wrapper import library_impl

CONTRACTS: tuple[Contract, ...] = (*(row for rows in gated.ROWS.values() for row in rows), *softmax.ROWS)


def gated_library_impls(family: str) -> tuple[Impl, ...]:
    """The library impls of a gated family (none for most)."""
    return tuple(library_impl(row) for row in gated.ROWS.get(family, ()))


def softmax_library_impls() -> tuple[Impl, ...]:
    return tuple(library_impl(row) for row in softmax.ROWS)


def contract(name: str) -> Contract:
    """The row of ``variant:impl``."""
    return next(row for row in CONTRACTS if row.name == name)


__all__ = ["CONTRACTS", "Contract", "contract", "gated_library_impls", "library_impl", "softmax_library_impls"]
