"""What the other kernel libraries' impls share (flash_kda.py, flashinfer_kda.py, cudnn_kda.py,
cula.py; flash_qla.py and flashinfer_gdn.py take the import check): why a library cannot run on
a device, the refusals every one of them makes in one
line (a gradient of a forward-only kernel, an initial state whose layout is unproven here, a
gate below a kernel's floor), and linbench's (B, H, S, ...) tensors as the libraries' layouts.
"""

from __future__ import annotations

import importlib.metadata
from collections.abc import Callable, Iterable

import torch

from linbench.errors import ImplUnavailableError

# The floor of KDA's bounded ("safe") gate in log space: Kimi K3's and GLM-5.3-Flash's lower
# bound, the one FlashKDA's and cuLA's fast paths assume (a gate below it is not representable
# in FlashKDA's lower_bound·σ(·), and cuLA's safe_gate kernels assume g ∈ [−5, 0)).
GATE_FLOOR = -5.0


def library_problem(
    distributions: Iterable[str], install: str, device: torch.device, arches: Iterable[tuple[int, int]], label: str
) -> str | None:
    """Why a CUDA library cannot run on ``device``: a distribution missing (``install`` says how
    to get it), not a CUDA device, or a compute capability outside ``arches``; None when it can."""
    for distribution in distributions:
        try:
            importlib.metadata.version(distribution)
        except importlib.metadata.PackageNotFoundError:
            return f"{distribution} is not installed ({install})"
    if device.type != "cuda":
        return f"{label} is a CUDA kernel, not for {device.type}"
    arch = torch.cuda.get_device_capability(device)
    allowed = tuple(arches)
    if arch not in allowed:
        names = ", ".join(f"SM{major}{minor}" for major, minor in allowed)
        return f"{label} runs on {names} only, not SM{arch[0]}{arch[1]}"
    return None


def library_unavailable(
    distribution: str,
    install: str,
    device: torch.device,
    arches: Iterable[tuple[int, int]],
    label: str,
    module: str,
    lookup: Callable[[], object],
) -> str | None:
    """``library_problem``'s reason, else why ``lookup`` (the kernel's import) fails: a broken
    install says why, in list, instead of crashing a run; None when the library can run."""
    return library_problem((distribution,), install, device, arches, label) or import_problem(module, lookup)


def import_problem(module: str, lookup: Callable[[], object]) -> str | None:
    """Why ``lookup`` (a library kernel's import) fails, in one line, or None: a broken install
    says why, in list, instead of crashing a run."""
    try:
        lookup()
    except Exception as exc:  # any import failure is the reason
        return f"{module} cannot be imported: {' '.join(str(exc).split())[:200]}"
    return None


def square_bf16_support(label: str, dims: int, dim_k: int, dim_v: int, dtype: str) -> str | None:
    """The limits FlashKDA, FlashInfer's KDA and cuLA share: K = V = ``dims``, bf16."""
    if (dim_k, dim_v) != (dims, dims):
        return f"{label} takes K = V = {dims} only, not Dk {dim_k}, Dv {dim_v}"
    if dtype != "bf16":
        return f"{label} takes bf16 only, not {dtype}"
    return None


def refuse_gradient(owner: str, *tensors: torch.Tensor) -> None:
    """A forward-only kernel asked for gradients: refused, never run without them."""
    if torch.is_grad_enabled() and any(t.requires_grad for t in tensors):
        raise ImplUnavailableError(f"{owner}: a forward-only kernel (no backward)")


def refuse_initial_state(owner: str, initial_state: object) -> None:
    """The libraries take an initial state, but its layout (k-last or v-last) could not be proven
    without a GPU: a state given is refused, never passed in a layout that may be wrong."""
    if initial_state is not None:
        raise ImplUnavailableError(f"{owner}: an initial state is not passed to it (unproven here)")


def refuse_non_causal(owner: str, causal: bool) -> None:
    if not causal:
        raise ImplUnavailableError(f"{owner}: causal only")


def refuse_gates_below_floor(owner: str, g: torch.Tensor) -> None:
    """A kernel whose gate is bounded below at ``GATE_FLOOR`` given a lower gate: refused with
    the lowest value, never clamped. (One pass over g and a host sync, inside the call.)"""
    lowest = float(g.detach().amin())
    if lowest < GATE_FLOOR:
        raise ImplUnavailableError(
            f"{owner}: its gate is bounded below at {GATE_FLOOR:g}; these gates go down to {lowest:.3g} "
            "(the lower-bound gate profile fits: --gates lower-bound)"
        )


def seq_major(x: torch.Tensor) -> torch.Tensor:
    """(B, H, S, ...) → (B, S, H, ...): a view (contiguous for a bshd drawing)."""
    return x.transpose(1, 2)


def tokens(x: torch.Tensor) -> torch.Tensor:
    """(B, H, S, ...) → (B·S, H, ...): a batch as B sequences back to back (THD)."""
    return x.transpose(1, 2).flatten(0, 1)


def untokens(x: torch.Tensor, batch: int) -> torch.Tensor:
    """(B·S, H, ...) → (B, H, S, ...)."""
    return x.unflatten(0, (batch, -1)).transpose(1, 2)
