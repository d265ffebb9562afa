"""What linbench knows of another kernel library's entry point, as one declaration: ``Contract``.

Each library impl (FlashInfer's, cuDNN's, FlashKDA's, cuLA's, FlashQLA's, FlashAttention's) is
one ``Contract`` row in gated.py or softmax.py, read from the library's source at the version the
row names. The generic wrapper (wrapper.py) builds the impl from it; ``linbench list`` shows its
summary and refusals; ``linbench check`` runs the impl it builds; docs/libraries.md is generated
from the rows (docs.py). A new reading of a library is a diff of its row.

The words a row uses:

- layout: how q, k, v reach the library. ``bshd``: (B, S, H, D) views of linbench's (B, H, S, D)
  tensors (contiguous copies where the row says ``contiguous``); ``packed``: a batch as one pack
  (1, B·S, H, D) with cu_seqlens; ``thd``: tokens (B·S, H, D) with cu_seqlens.
- gate: ``log`` the log-gate as drawn (differentiable, a view); ``log-bf16`` the log-gate rounded
  to bf16; ``linear`` α = e^g in fp32; ``lower-bound-logit`` the pre-activation x with
  −5·σ(x) = g that a kernel computing its gate as lower_bound·σ(e^{A_log}(x + dt_bias)) takes
  (A_log = 0, dt_bias = 0, lower_bound = −5). beta: ``as-drawn``, ``bf16``, ``fp32`` or
  ``logit-bf16``. Every conversion other than ``log``/``as-drawn`` is made once, untimed, when a
  point's inputs are drawn (``hold``), as a model holds them: only forward-only rows convert.
- value_heads: ``native`` (the library takes more value heads than q/k heads) or ``repeat`` (q
  and k repeated to v's heads in the call); for softmax, kv_heads ``native`` (grouped-query).
"""

from __future__ import annotations

import importlib
import importlib.metadata
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from typing import Any

import torch

from linbench.errors import ImplUnavailableError

# The floor of KDA's bounded ("safe") gate in log space, the lower_bound of FlashKDA's and
# FlashInfer's in-kernel gate and of cuLA's safe_gate kernels (Kimi K3's, GLM-5.3-Flash's).
GATE_FLOOR = -5.0
Arch = tuple[int, int]  # a compute capability; rows key their facts by its major
GATES = ("log", "log-bf16", "linear", "lower-bound-logit", "none")
BETAS = ("as-drawn", "bf16", "fp32", "logit-bf16", "none")
LAYOUTS = ("bshd", "packed", "thd")


@dataclass(frozen=True)
class Args:
    """One call's tensors in the library's layout (q and k already at v's heads where the row
    repeats them), the held inputs (``hold``), and what the call needs besides."""

    q: torch.Tensor
    k: torch.Tensor
    v: torch.Tensor
    g: Any
    beta: Any
    scale: float | None
    causal: bool
    cu_seqlens: torch.Tensor | None
    max_seqlen: int
    arch: Arch | None
    held: Mapping[str, Any]
    grad: bool  # gradients are wanted from this call


# The library's function and one call's Args → the output in the library's layout.
CallFn = Callable[[Callable[..., Any], Args], torch.Tensor]


@dataclass(frozen=True)
class Contract:
    """One library impl's facts (module docstring), as read at ``version`` from ``read_from``."""

    variant: str
    impl: str
    distribution: str
    version: str
    read_from: tuple[str, ...]  # "file:line: what it says", the lines each fact came from
    module: str
    entry: str
    call: CallFn
    kernels: Mapping[int, str]  # compute capability major → the kernel that runs there
    layout: str
    install: str = ""
    packed_entry: str = ""  # the function a pack calls, where not ``entry``
    no_kernel: Mapping[int, str] = field(default_factory=dict)  # major → why the library has none there
    entries: Mapping[int, str] = field(default_factory=dict)  # major → its own entry point, where not ``entry``
    also_needs: tuple[str, ...] = ()  # further distributions the entry point imports
    # Further inputs made once, untimed, with the held ones: fn(q, k, v, segments, **params) → {name: tensor}.
    held_extra: Callable[..., dict[str, Any]] | None = None
    contiguous: bool = False
    cu_dtype: torch.dtype = torch.int32
    packs: str = "cu_seqlens"  # or "none": no packed form (a pack runs padded, as a batch)
    # Non-empty: the entry takes one sequence, and a batch of more is refused with this reason
    # (calls in turn are not how the library runs a batch, so they would time neither).
    one_sequence: str = ""
    gate: str = "none"
    beta: str = "none"
    scale_default: str = "Dk^-1/2 when None"
    value_heads: str = "native"
    dtypes: tuple[str, ...] = ("bf16",)
    dims: tuple[int, ...] = (128,)  # K = V among these (empty: any up to max_dim, multiples of 8)
    max_dim: int = 256
    arch_dims: Mapping[int, tuple[int, ...]] = field(default_factory=dict)  # major → narrower dims
    arch_dtypes: Mapping[int, tuple[str, ...]] = field(default_factory=dict)  # major → narrower dtypes
    backward: tuple[int, ...] = ()  # compute capability majors with a backward
    gate_floor: float | None = None
    notes: str = ""

    def __post_init__(self) -> None:
        if self.layout not in LAYOUTS or self.gate not in GATES or self.beta not in BETAS:
            raise ValueError(f"{self.name}: layout, gate or beta not one of {LAYOUTS}, {GATES}, {BETAS}")
        if self.backward and (self.converts_gate or self.converts_beta):
            raise ValueError(f"{self.name}: a held conversion of g or β would cut their gradients")

    @property
    def name(self) -> str:
        return f"{self.variant}:{self.impl}"

    @property
    def converts_gate(self) -> bool:
        return self.gate not in ("log", "none")

    @property
    def converts_beta(self) -> bool:
        return self.beta not in ("as-drawn", "none")

    def entry_point(self, packed: bool = False, arch: Arch | None = None) -> Callable[..., Any]:
        """The library's function (looked up per call, so tests can stand one in)."""
        name = self.packed_entry if packed and self.packed_entry else self.entry
        name = self.entries.get(arch[0], name) if arch else name
        return getattr(importlib.import_module(self.module), name)

    def kernel_for(self, arch: Arch | None) -> str:
        """The kernel that runs on ``arch`` (the first declared where it is not known: a CPU)."""
        first = next(iter(self.kernels.values()))
        return self.kernels.get(arch[0], first) if arch else first

    def arch_names(self) -> str:
        return "/".join(f"SM{major}x" for major in self.kernels)

    def unavailable(self, device: torch.device) -> str | None:
        """Why the library cannot run on ``device``, or None."""
        for distribution in (self.distribution, *self.also_needs):
            try:
                importlib.metadata.version(distribution)
            except importlib.metadata.PackageNotFoundError:
                return f"{distribution} is not installed ({self.install or 'pip install ' + distribution})"
        if device.type != "cuda":
            none = "".join(f"; none for SM{major}x" for major in self.no_kernel)
            return f"{self.name} is a CUDA kernel ({self.arch_names()}{none}), not for {device.type}"
        arch = torch.cuda.get_device_capability(device)
        if arch[0] in self.no_kernel:
            return f"{self.name}: {self.no_kernel[arch[0]]}"
        if arch[0] not in self.kernels:
            return f"{self.name} runs on {self.arch_names()} only, not {sm(arch)}"
        try:
            self.entry_point()
        except Exception as exc:  # a broken install says why, in list, instead of crashing a run
            return f"{self.module} cannot be imported: {' '.join(str(exc).split())[:200]}"
        return None

    def shape_support(self, dim_k: int, dim_v: int, dtype: str) -> str | None:
        """Why the library cannot take these head sizes or this dtype, or None."""
        if dtype not in self.dtypes:
            return f"{self.name} takes {'/'.join(self.dtypes)} only, not {dtype}"
        if dim_k != dim_v:
            return f"{self.name} takes one head size for q, k and v (Dk = Dv), not Dk {dim_k}, Dv {dim_v}"
        if self.dims and dim_k not in self.dims:
            return f"{self.name} takes head size {'/'.join(map(str, self.dims))} only, not {dim_k}"
        if not self.dims and (dim_k > self.max_dim or dim_k % 8):
            return f"{self.name} takes head sizes up to {self.max_dim}, multiples of 8, not {dim_k}"
        return None

    def refusal(self, q: torch.Tensor, arch: Arch | None, grad: bool) -> str | None:
        """Why this call on (B, H, S, D) ``q`` cannot run here (a batch an entry for one sequence
        cannot take, dtype, a head size the GPU's kernel lacks, a gradient of a forward-only
        kernel), or None."""
        if arch is not None and arch[0] in self.no_kernel:
            return self.no_kernel[arch[0]]
        if self.one_sequence and q.shape[0] > 1:
            return f"a batch of {q.shape[0]}: {self.one_sequence}"
        dtype = {torch.bfloat16: "bf16", torch.float16: "fp16"}.get(q.dtype, str(q.dtype).removeprefix("torch."))
        if dtype not in self.dtypes:
            return f"{'/'.join(self.dtypes)} only, not {dtype}"
        dtypes = self.arch_dtypes.get(arch[0], ()) if arch else ()
        if dtypes and dtype not in dtypes:
            return f"{sm(arch)} takes {'/'.join(dtypes)} only, not {dtype}"
        narrower = self.arch_dims.get(arch[0], ()) if arch else ()
        if narrower and q.shape[-1] not in narrower:
            return f"{sm(arch)} takes head size {'/'.join(map(str, narrower))} only, not {q.shape[-1]}"
        if grad and not (arch[0] in self.backward if arch else self.backward):
            where = f" on {sm(arch)}" if arch and self.backward else ""
            return f"a forward-only kernel{where} (no backward)"
        return None


def sm(arch: Arch | None) -> str:
    return f"SM{arch[0]}{arch[1]}" if arch else "SM?"


def capability(device: torch.device) -> Arch | None:
    """The compute capability of a CUDA device (None elsewhere; tests set it here)."""
    return torch.cuda.get_device_capability(device) if device.type == "cuda" else None


def refuse(contract: Contract, reason: str | None) -> None:
    if reason is not None:
        raise ImplUnavailableError(f"{contract.name}: {reason}")


def gate_floor_problem(g: torch.Tensor, floor: float) -> str | None:
    """Why gates below a kernel's floor cannot go to it (a read of every value: untimed only)."""
    lowest = float(g.detach().amin()) if g.numel() else 0.0
    if lowest < floor:
        return (
            f"its gate is bounded below at {floor:g}; these gates go down to {lowest:.3g} "
            "(the lower-bound gate profile fits: --gates lower-bound)"
        )
    return None


def logit(share: torch.Tensor) -> torch.Tensor:
    """log(p / (1 − p)) in fp32: σ of it gives back p (±inf at 0 and 1, σ of both exact)."""
    p = share.float()
    return p.log() - (-p).log1p()


def convert_gate(rule: str, g: torch.Tensor) -> torch.Tensor:
    """The log-gate ``g`` as the row's gate rule says (module docstring)."""
    if rule == "log-bf16":
        return g.to(torch.bfloat16)
    if rule == "linear":
        return g.float().exp()
    if rule == "lower-bound-logit":  # in [0, 1] once the floor is checked
        return logit((g.float() / GATE_FLOOR).clamp(0.0, 1.0)).to(torch.bfloat16)
    return g


def convert_beta(rule: str, beta: torch.Tensor) -> torch.Tensor:
    if rule == "bf16":
        return beta.to(torch.bfloat16)
    if rule == "fp32":
        return beta.float()
    if rule == "logit-bf16":
        return logit(beta).to(torch.bfloat16)
    return beta
