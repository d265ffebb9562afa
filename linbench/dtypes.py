"""Dtype names as users type them (fp32, bf16, ...), shared by the commands and the sweep.

torch is imported only when a torch dtype is asked for, so parsing stays cheap.
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    import torch

# Canonical short name -> torch dtype attribute; aliases map onto the short names.
DTYPE_NAMES = {"fp64": "float64", "fp32": "float32", "bf16": "bfloat16", "fp16": "float16"}
DTYPE_ALIASES = {"float64": "fp64", "double": "fp64", "float32": "fp32", "float": "fp32"}
DTYPE_ALIASES |= {"bfloat16": "bf16", "float16": "fp16", "half": "fp16"}


def split_list(values: Iterable[str] | None) -> list[str]:
    """Flatten repeated options that may each hold a comma list, dropping repeats.

    An empty item (``a,,b``, a trailing comma, an empty value) is a ValueError, the rule of
    the range grammar (linbench/sweep/ranges.py): a stray comma is a typo, not a request.
    """
    items: list[str] = []
    for value in values or ():
        parts = [part.strip() for part in str(value).split(",")]
        if not all(parts):
            what = "is empty" if len(parts) == 1 else "has an empty item between commas"
            raise ValueError(f"{str(value)!r} {what}")
        items += parts
    return list(dict.fromkeys(items))


def parse_dtypes(values: Iterable[str] | None) -> list[str]:
    """Canonical dtype names (fp64, fp32, bf16, fp16) for ``values``; ValueError on others."""
    names = []
    for value in split_list(values):
        name = DTYPE_ALIASES.get(value.lower(), value.lower())
        if name not in DTYPE_NAMES:
            raise ValueError(f"unknown dtype {value!r}; dtypes: {', '.join(DTYPE_NAMES)}")
        names.append(name)
    return list(dict.fromkeys(names)) or ["fp32"]


def torch_dtype(name: str) -> torch.dtype:
    """The torch dtype for a canonical name from parse_dtypes."""
    import torch

    return getattr(torch, DTYPE_NAMES[name])
