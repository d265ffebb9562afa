"""The ``fla`` impls: flash-linear-attention's chunk kernel (fla-core, Triton) on a variant.

fla's ``chunk_linear_attn(q, k, v, scale, ..., normalize)`` computes, in its own (B, S, H, D)
layout, o_i = scale · Σ_{j≤i} (q_i·k_j) v_j, divided by scale · Σ_{j≤i} q_i·k_j + 1e-10 when
``normalize``. The variants map onto it exactly up to constants, which each impl's
description and the variant's README state:

- cosine: q and k L2-normalised in PyTorch (F.normalize, as the variant does), ``normalize=False``;
  the value scale s^-σ(m) goes in as fla's ``scale`` for a number m, or onto v for a per-head
  tensor m (so its gradient reaches m).
- linear: q and k through elu + 1 in PyTorch, ``normalize=True`` with ``scale=1``; fla adds
  1e-10 to the normaliser where the variant adds eps (1e-6 by default). Another eps is refused.

The two adapters live with their variants (``linbench/variants/cosine/fla.py``,
``linbench/variants/linear/fla.py``), so that the gated families' fla impls, which share this
module's loading and dispatch, do not run (and are not re-measured for a change to) cosine's
or linear's feature maps.

fla has no bidirectional form: a bidirectional point raises ImplUnavailableError. The impls
declare fla's layout (``layout="bshd"``): ``linbench run`` draws their inputs as (B, S, H, D)
tensors, untimed, and passes (B, H, S, D) views of them, which the adapters turn back into
contiguous (B, S, H, D) views at no cost, as a model holding fla's layout would call it. Given
contiguous (B, H, S, D) tensors (the API, the correctness gate), fla copies them itself.
"""

from __future__ import annotations

import importlib
import importlib.metadata
import importlib.util
import inspect
import os
from collections.abc import Callable
from typing import Any

import torch

from linbench.errors import ImplUnavailableError
from linbench.variants.backends import note_backend
from linbench.variants.declarations import Impl
from linbench.variants.feature_forms.triton_interpreter import (
    bridge_aliased_builtins,
    bridge_interpreter,
    interpreter_on,
)

DISTRIBUTION = "fla-core"
# The range linbench's fla impls were written and checked against (fla-core's API moves).
TESTED_MAJOR_MINOR = (0, 6)
TESTED_RANGE = "0.6.x"
FLA_EPS = 1e-10  # added to the normaliser inside fla's chunk_linear_attn
INSTALL_HINT = "pip install -e '.[fla]'"


# fla-core 0.6 hands some of its ops to other libraries wherever they are installed:
# chunk_gated_delta_rule to FlashQLA (SM90/SM100, K = V = 128), chunk_kda to FlashKDA. A number
# labelled `fla` must be fla's own Triton kernel, so linbench turns that dispatch off before fla
# is first imported, unless the user set these variables themselves; meta.json says which held.
DISPATCH_SWITCHES = {"FLA_DISABLE_BACKEND_DISPATCH": "1", "FLA_FLASH_KDA": "0"}
DISPATCH_TARGETS = ("flash-qla", "flash-kda")


_PINNED: set[str] = set()  # the switches linbench set itself (not the user)
# fla-core 0.6.0 turns Triton's on-disk autotune cache on (FLA_CACHE_RESULTS, default '1', in
# fla/utils/env.py), which keys a choice by the kernel's autotune key, without the sequence
# length: a config tuned at one length would be read back at every other, in every later
# process. Off unless the user set it; a measuring process turns it off in each autotuner
# whatever is set (runner/triton_tuning.py).
AUTOTUNE_CACHE_SWITCH = ("FLA_CACHE_RESULTS", "0")


def pin_fla_dispatch() -> None:
    """Turn fla's hand-off to other kernel libraries off, where the user has not set it (fla
    reads these when its modules are first imported, so this runs before any fla import)."""
    for name, value in DISPATCH_SWITCHES.items():
        if name not in os.environ:
            os.environ[name] = value
            _PINNED.add(name)
    os.environ.setdefault(*AUTOTUNE_CACHE_SWITCH)


def pinned_by_linbench() -> tuple[str, ...]:
    """The per-backend switches of DISPATCH_SWITCHES that linbench set (FLA_FLASH_KDA), not the
    process-wide one, which fla read once at import."""
    return tuple(sorted(_PINNED - {"FLA_DISABLE_BACKEND_DISPATCH"}))


def import_fla(module: str) -> Any:
    """``module`` (an fla module), imported with the dispatch pinned off first (and, under
    Triton's interpreter, its gaps bridged: triton_interpreter.py)."""
    pin_fla_dispatch()
    bridge_interpreter()
    imported = importlib.import_module(module)
    bridge_aliased_builtins("fla.")  # its kernels are imported with the module: bridged after
    return imported


def dispatch_record() -> dict[str, str]:
    """What meta.json keeps about fla's dispatch: whether it was off (fla's own kernels ran)
    and the versions of the libraries it could have handed ops to, where installed."""
    disabled = os.environ.get("FLA_DISABLE_BACKEND_DISPATCH", DISPATCH_SWITCHES["FLA_DISABLE_BACKEND_DISPATCH"]) == "1"
    record = {
        "fla_backend_dispatch": "off (fla's own kernels)" if disabled else "on (FLA_DISABLE_BACKEND_DISPATCH unset)"
    }
    for target in DISPATCH_TARGETS:
        try:
            record[target.replace("-", "_")] = importlib.metadata.version(target)
        except importlib.metadata.PackageNotFoundError:
            continue
    return record


def backend_name(kernel: str, device: torch.device) -> str:
    """results.csv's ``backend`` for fla's own Triton ``kernel`` (dispatch off), marked
    interpreted where it runs under Triton's interpreter on the CPU."""
    interpreted = device.type == "cpu" and interpreter_on()
    name = f"fla-triton{' (interpreted)' if interpreted else ''} {kernel}"
    # Unset reads as off: linbench pins it so before fla is first imported.
    if os.environ.get("FLA_DISABLE_BACKEND_DISPATCH", "1") != "1":  # the user turned fla's dispatch on
        return f"{name} (or a library fla's dispatch handed it to)"
    return name


def fla_version() -> str | None:
    """The installed fla-core's version, or None when it is not installed."""
    try:
        return importlib.metadata.version(DISTRIBUTION)
    except importlib.metadata.PackageNotFoundError:
        return None


def _tested(version: str) -> bool:
    parts = version.split(".")
    try:
        return (int(parts[0]), int(parts[1])) == TESTED_MAJOR_MINOR
    except (IndexError, ValueError):
        return False


def fla_unavailable(device: torch.device, module: str = "fla.ops.linear_attn") -> str | None:
    """Why the fla impls whose kernels live in ``module`` cannot run on ``device`` (None: they can)."""
    version = fla_version()
    if version is None:
        return f"fla-core is not installed ({INSTALL_HINT}); its Triton kernels also need a CUDA GPU"
    if not _tested(version):
        return f"fla-core {version} is installed; linbench's fla impls are written for {TESTED_RANGE}"
    if device.type == "cpu" and interpreter_on():
        if importlib.util.find_spec("triton") is None:
            return "TRITON_INTERPRET=1 is set but Triton is not installed (pip install triton)"
    elif device.type != "cuda":
        return (
            f"fla's kernels are Triton kernels and need a CUDA GPU, not {device.type} "
            "(on a CPU: TRITON_INTERPRET=1 runs them interpreted, for linbench check)"
        )
    else:
        from torch.utils._triton import has_triton

        if not has_triton():
            return "fla's kernels need Triton, which is not installed or finds no GPU it supports"
    try:
        import_fla(module)
    except Exception as exc:  # a broken install says why, in list, instead of crashing a run
        return f"fla cannot be imported: {' '.join(str(exc).split())[:200]}"
    return None


def chunk_linear_attn() -> Callable[..., tuple[torch.Tensor, Any]]:
    """fla's chunk kernel (looked up per call, so tests can put a stand-in in its place)."""
    return import_fla("fla.ops.linear_attn").chunk_linear_attn


def run_fla(
    q: torch.Tensor, k: torch.Tensor, v: torch.Tensor, *, scale: float, normalize: bool, segments: Any = None
) -> torch.Tensor:
    """fla on (B, H, S, D) tensors: (B, S, H, D) views in (contiguous when the runner drew the
    inputs in fla's layout), the output back as a (B, H, S, D) view. With ``segments`` (a
    packed batch's, linbench/variants/varlen.py), fla's own varlen path: ``cu_seqlens``."""
    fq, fk, fv = (t.transpose(1, 2) for t in (q, k, v))
    note_backend(backend_name("chunk_linear_attn", q.device))
    kernel = chunk_linear_attn()
    if segments is None:
        out, _ = kernel(fq, fk, fv, scale=scale, normalize=normalize)
        return out.transpose(1, 2)
    if "cu_seqlens" not in inspect.signature(kernel).parameters:
        raise ImplUnavailableError("this fla-core's chunk_linear_attn takes no cu_seqlens: it runs packs padded")
    out, _ = kernel(fq, fk, fv, scale=scale, normalize=normalize, cu_seqlens=segments.cu_seqlens(q.device))
    return out.transpose(1, 2)


def causal_only(name: str, causal: bool) -> None:
    if not causal:
        raise ImplUnavailableError(f"{name}: fla's chunk_linear_attn is causal only")


def _availability(device: torch.device) -> str | None:
    return fla_unavailable(device)  # looked up per call: tests stand fla in and out


def fla_dtype_support(dim_k: int, dim_v: int, dtype: str) -> str | None:
    """fla's Triton kernels take fp32, fp16 and bf16 (no fp64)."""
    del dim_k, dim_v
    return "fla's Triton kernels have no fp64 form" if dtype == "fp64" else None


def fla_impl(fn: Callable[..., torch.Tensor], summary: str) -> Impl:
    """The ``fla`` impl of a variant; it runs where fla-core 0.6 and a Triton GPU are."""
    return Impl(
        "fla",
        fn,
        summary,
        "O(sd²)",
        "O(sd)",
        time_exponent=1,
        availability=_availability,
        shape_support=fla_dtype_support,
        optional=True,
        layout="bshd",
        library=DISTRIBUTION,
        packed=fn,  # fla's cu_seqlens, where the installed fla-core takes them
    )
