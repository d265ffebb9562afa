"""Constant tensors an impl derives from its parameters, made once per value, dtype and device.

A model holds its per-head constants on the GPU, as parameters or buffers: a decay schedule,
Mamba2's A_log, dt_bias and D. Built from Python numbers inside each call,
``torch.tensor(values, device="cuda")`` (or a host tensor moved with ``.to("cuda")``) copies
from the host and synchronises the stream. Every call would then wait for the device, its
launches could no longer overlap the kernels queued before them, and no CUDA graph could be
captured: a timed call would measure the host as well. So the impls take such constants from
here. The runner's untimed first call makes each one, and the timed calls read it back.

A constant is shared by every call that asks with the same key: never modify one in place.
None requires grad (a learnable parameter is a tensor the caller passes, not a constant). None
is ever let go: a CUDA graph captured over one reads its memory at every replay, and the keys
are few (head counts × parameter values × dtypes × devices), each a few hundred bytes.
"""

from __future__ import annotations

from collections.abc import Callable, Hashable, Sequence

import torch

_made: dict[tuple[Hashable, torch.dtype, torch.device], torch.Tensor] = {}


def device_constant(
    key: Hashable, like: torch.Tensor, values: Callable[[], Sequence[float] | torch.Tensor]
) -> torch.Tensor:
    """``values()`` as a tensor in ``like``'s dtype, on its device: made on the first call with
    this ``key`` (which must name everything ``values`` depends on), read back after that."""
    where = (key, like.dtype, like.device)
    made = _made.get(where)
    if made is None:
        with torch.inference_mode(False), torch.no_grad():  # a plain tensor, usable under autograd
            made = torch.as_tensor(values(), dtype=torch.float64).to(dtype=like.dtype, device=like.device)
        _made[where] = made
    return made
