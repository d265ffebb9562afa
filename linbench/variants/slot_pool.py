"""A serving pool: the constant-size states of a server's requests, one slot each.

Each tensor of a decoder's state (a dataclass of tensors and counters, such as
``GatedState``) gets a leading slot axis; a step gathers the requests' slots
(``index_select``) and writes them back (``index_copy_``). The pool keeps its own dtype
(``--state-dtype``) and its own layout of each Dk×Dv matrix per head (``--state-layout``):
``v-last`` (H, Dk, Dv), linbench's and fla's, or ``k-last`` (H, Dv, Dk), the layout
FlashInfer's decode kernels keep (``state_v_first`` in fla); a decoder stepping in the other
layout reads it transposed, and that conversion is part of the step.
"""

from __future__ import annotations

import dataclasses
from typing import Any

import torch

from linbench.shape import K_LAST, STATE_LAYOUTS, V_LAST


def _fields(state: Any) -> dict[str, Any]:
    if not dataclasses.is_dataclass(state) or isinstance(state, type):
        raise TypeError(f"a pooled state is a dataclass of tensors and counters; got {type(state).__name__}")
    return {item.name: getattr(state, item.name) for item in dataclasses.fields(state)}


def tensor_fields(state: Any) -> dict[str, torch.Tensor]:
    return {name: value for name, value in _fields(state).items() if isinstance(value, torch.Tensor)}


def _counters(state: Any) -> dict[str, Any]:
    return {name: value for name, value in _fields(state).items() if not isinstance(value, torch.Tensor)}


def select_rows(state: Any, rows: torch.Tensor) -> Any:
    """``state`` with every tensor cut to the batch rows ``rows`` (a copy)."""
    cut = {name: tensor.index_select(0, rows.to(tensor.device)) for name, tensor in tensor_fields(state).items()}
    return dataclasses.replace(state, **cut)


def _is_matrix(tensor: torch.Tensor) -> bool:
    """A Dk×Dv matrix per head, (B, H, Dk, Dv): what a layout orders (not a key sum)."""
    return tensor.ndim == 4


class SlotPool:
    """Constant-size states of ``slots`` requests, each tensor of the state with a leading slot
    axis, kept in ``dtype`` and each matrix in ``layout`` (``k_last``: transposed, (H, Dv, Dk));
    the counters (tokens absorbed) per slot."""

    def __init__(self, like: Any, slots: int, dtype: torch.dtype | None, layout: str = V_LAST) -> None:
        if layout not in STATE_LAYOUTS:
            raise ValueError(f"state layout {layout!r}: the layouts are {', '.join(STATE_LAYOUTS)}")
        self._like, self.layout = like, layout
        # The dtype each tensor is stepped in (the decoder's own), restored when it is taken.
        self._dtypes = {name: tensor.dtype for name, tensor in tensor_fields(like).items()}
        self.tensors = {
            name: self._stored(tensor).new_zeros((slots, *self._stored(tensor).shape[1:]), dtype=dtype or tensor.dtype)
            for name, tensor in tensor_fields(like).items()
        }
        self._counters: list[dict[str, Any]] = [_counters(like) for _ in range(slots)]

    @property
    def k_last(self) -> bool:
        return self.layout == K_LAST

    def _stored(self, tensor: torch.Tensor) -> torch.Tensor:
        """A decoder's tensor as the pool keeps it (a view: the copy is the write's)."""
        return tensor.transpose(-1, -2) if self.k_last and _is_matrix(tensor) else tensor

    def put(self, slots: torch.Tensor, state: Any, counters: bool = True) -> None:
        """Write ``state``'s rows into ``slots`` (one slot per batch row); ``counters`` False
        leaves the tokens absorbed as they were (a captured step cannot read its slots back)."""
        for name, tensor in tensor_fields(state).items():
            pooled = self.tensors[name]
            pooled.index_copy_(0, slots.to(pooled.device), self._stored(tensor).to(pooled.dtype))
        if counters:
            kept = _counters(state)
            for slot in slots.tolist():
                self._counters[slot] = kept

    def copy(self) -> SlotPool:
        """Another pool of the same slots, its tensors copies of these (a rotating pool)."""
        twin = SlotPool(self._like, 0, None, self.layout)
        twin._dtypes, twin._counters = self._dtypes, list(self._counters)
        twin.tensors = {name: tensor.clone() for name, tensor in self.tensors.items()}
        return twin

    def take(self, slots: torch.Tensor) -> Any:
        """The states of ``slots`` gathered into one batch, in the dtype and layout the decoder
        made them in (k-last: a transposed view of the gathered rows); the counters are the
        first slot's (a group's slots share them where the step reads them)."""
        gathered = {
            name: self._stored(pooled.index_select(0, slots.to(pooled.device))).to(self._dtypes[name])
            for name, pooled in self.tensors.items()
        }
        return dataclasses.replace(self._like, **gathered, **self._counters[int(slots[0])])

    def moved(self, before: torch.Tensor, after: torch.Tensor, absorbed: torch.Tensor) -> None:
        """The counters of slots ``after`` from those of ``before``, ``absorbed`` tokens on: the
        step a kernel took in the pool itself (it writes tensors, not counters)."""
        for old, new, count in zip(before.tolist(), after.tolist(), absorbed.tolist(), strict=True):
            kept = self._counters[old]
            self._counters[new] = {name: value + count if name == "position" else value for name, value in kept.items()}

    @property
    def matrix(self) -> torch.Tensor:
        """The one tensor of a state that is a single matrix per head (what a kernel takes)."""
        if len(self.tensors) != 1:
            raise ValueError(f"a kernel's pool holds one tensor; this state has {', '.join(self.tensors)}")
        return next(iter(self.tensors.values()))

    @property
    def slot_bytes(self) -> int:
        return sum(t[0].numel() * t.element_size() for t in self.tensors.values())

    @property
    def nbytes(self) -> int:
        return sum(t.numel() * t.element_size() for t in self.tensors.values())


def cast_state(state: Any, dtype: torch.dtype) -> Any:
    """``state`` with every floating tensor in ``dtype``."""
    cast = {name: t.to(dtype) for name, t in tensor_fields(state).items() if t.is_floating_point()}
    return dataclasses.replace(state, **cast)


def tensor_bytes(state: Any) -> int:
    return sum(t.numel() * t.element_size() for t in tensor_fields(state).values())
