"""What a variant is declared from: its parameters, impls and decoders, and the functions they hold.

A *variant* (linbench/variants/variant.py) is a mathematical function (softmax, cosine, ...);
an *impl* is one way to compute it (naive, quadratic, chunked, ...); a *decoder* one way to
generate with it token by token. Each is declared as data, which the runner and the reports
read; none of them measures anything.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    import torch

# An impl function: fn(q, k, v, *, causal, **params) -> Tensor. Every declared parameter
# is passed by keyword, with its default filled in, so impl functions carry no defaults.
ImplFn = Callable[..., "torch.Tensor"]
# Returns None when the impl can run on the device, else a reason it cannot.
AvailabilityFn = Callable[["torch.device"], "str | None"]
# Returns None when the impl handles these head dims and dtype ("fp32", ...), else why not.
ShapeSupportFn = Callable[[int, int, str], "str | None"]
FlopsFn = Callable[[int, int, int, int, int, bool, str], float]
# Causal recurrent attention continuing from a carried state: fn(q, k, v, *, state, **params)
# -> (out, new_state). state=None starts from nothing.
StreamFn = Callable[..., "tuple[torch.Tensor, Any]"]
# A packed form: fn(q, k, v, *, segments, causal, **params) on a packed batch of variable-length
# sequences, q and k (1, H, T, Dk), ``segments`` (linbench/variants/varlen.py) where each starts.
PackedFn = Callable[..., "torch.Tensor"]
# A padded batch whose pads' keys are masked out: fn(q, k, v, *, key_mask, causal, **params),
# key_mask (N, S) bool, True at real tokens.
MaskedFn = Callable[..., "torch.Tensor"]
# Absorbs a prompt into a decoding state with a parallel form:
# fn(q, k, v, *, state, capacity, **params) -> new_state.
PrefillFn = Callable[..., Any]
# A step whose kernel reads and writes a state pool itself (fla's ``ssm_state_indices``):
# fn(pool, slots, accepted, q, k, v, *, k_last, **params) -> out, the pool written in place;
# slots (B,) or (B, T) (T > 1: the state after token t goes to slots[b, t]), accepted (B,) the
# previous step's accepted tokens (the state read is slots[b, accepted[b] − 1]) or None.
PooledStepFn = Callable[..., "torch.Tensor"]
# What an impl holds precomputed for a call's inputs (Impl.hold): fn(q, k, v, *, segments,
# **params) -> {name: value}, segments None for a batch.
HoldFn = Callable[..., "dict[str, Any]"]
# Returns None when a parameter's value is acceptable, else what is wrong with it, as the end of
# a sentence naming the parameter ("must lie in (0, 1); got 1.5").
ValueCheck = Callable[[Any], "str | None"]
# Draws a learnable parameter for the correctness gate: fn(heads, generator) -> an fp64 (H,)
# tensor on the CPU, so that the gradient reaching it is checked too.
LearnableDraw = Callable[[int, "torch.Generator"], "torch.Tensor"]


@dataclass(frozen=True)
class Param:
    """A parameter of a variant or impl. ``default=None`` means derived from the input."""

    name: str
    default: Any
    help: str
    # True when the default is the sequence length S (cosine's seq_len, cosformer's M): a
    # sequence fed in pieces must fix it to the whole length, or each piece gets its own.
    from_length: bool = False
    # The values it takes: a --param outside them is refused before anything runs (exit 2).
    check: ValueCheck | None = None
    # A learnable parameter (cosine's m): how the correctness gate draws a per-head tensor of it.
    learnable: LearnableDraw | None = None

    # Why a value cannot be taken on a device type ("cpu", "cuda"), or None when it can: asked
    # when a sweep is planned (a --chunk size the csrc kernel cannot run), before any point runs.
    device_check: Callable[[Any, str], str | None] | None = None

    def problem(self, value: Any) -> str | None:
        """None when ``value`` is one the parameter takes, else one line saying what is wrong."""
        complaint = self.check(value) if self.check is not None and value is not None else None
        return f"parameter {self.name} {complaint}" if complaint else None

    def refusal(self, value: Any, device_type: str) -> str | None:
        """Why ``value`` cannot be taken on ``device_type``, or None."""
        return self.device_check(value, device_type) if self.device_check is not None else None


@dataclass(frozen=True)
class Decoder:
    """One way to generate tokens with a variant: absorb a context, then one token per step.

    ``prefill`` builds the state from a prompt with a parallel form (``linbench decode``
    does not time it), continuing from ``state`` (None: the start); ``capacity`` is how many
    tokens the state will hold in all, so that a cache is allocated once. ``step`` is causal
    attention of new tokens over everything absorbed so far: (outputs, new state).
    """

    name: str
    summary: str
    prefill: PrefillFn
    step: StreamFn
    state_memory: str  # how the state grows with the context: "O(d²)" (constant), "O(sd)"
    step_time: str  # the cost of one generated token: "O(d²)", "O(sd)", "O(s²d)"
    # The same two facts as powers of the context s, for the code that plans a sweep (its fit
    # check and duration estimate): state_memory O(sd) is 1, O(d²) is 0; step_time O(s²d) is
    # 2. None (a plugin that does not say): read from the strings above (exponent_in_s).
    state_exponent: int | None = None
    step_exponent: int | None = None
    # Keeps its state (cache) per key/value head when k and v have fewer heads than q; False:
    # decode() repeats k and v to q's heads before prefill and step, and the state is as large
    # as with a key/value head per query head.
    gqa: bool = False
    # On an optional library (fla): why it cannot run on a device (None: it can); a command
    # naming the variant leaves it out with the reason where it cannot, as an optional impl.
    availability: AvailabilityFn | None = None
    library: str | None = None
    # Its kernel gathers the requests' states from a serving pool by slot and writes them back
    # itself (linbench/variants/serving.py hands it the pool); None: the generic gather/scatter.
    pooled: PooledStepFn | None = None

    def __post_init__(self) -> None:
        derive_exponent(self, "state_exponent", self.state_memory)
        derive_exponent(self, "step_exponent", self.step_time)

    @classmethod
    def from_stream(
        cls,
        name: str,
        summary: str,
        stream: StreamFn,
        state_memory: str,
        step_time: str,
        *,
        state_exponent: int | None = None,
        step_exponent: int | None = None,
        gqa: bool = False,
    ) -> Decoder:
        """A decoder that prefills through ``stream`` too (a recurrent form has no faster
        prefill to offer), with its state and step costs declared."""

        def prefill(
            q: torch.Tensor, k: torch.Tensor, v: torch.Tensor, *, state: Any, capacity: int, **params: Any
        ) -> Any:
            del capacity  # a recurrent state does not grow
            return stream(q, k, v, state=state, **params)[1]

        return cls(
            name,
            summary,
            prefill,
            stream,
            state_memory,
            step_time,
            state_exponent=state_exponent,
            step_exponent=step_exponent,
            gqa=gqa,
        )

    @property
    def state_grows(self) -> bool:
        """True when the state grows with the context (a KV cache), not a fixed size."""
        return bool(self.state_exponent)


# The backend of an impl that torch.compile builds in each worker process on its first call: the
# runner gives its processes a compile allowance beside --timeout-s (linbench/runner/plan.py).
TORCH_COMPILE = "torch compile (inductor)"


@dataclass(frozen=True)
class Impl:
    """One way to compute a variant."""

    name: str
    fn: ImplFn
    summary: str
    time_complexity: str
    memory_complexity: str
    params: tuple[Param, ...] = ()
    availability: AvailabilityFn | None = None
    shape_support: ShapeSupportFn | None = None
    # Runs on an optional library (fla): a suite or command that names it where it cannot run
    # leaves it out with a note saying why, rather than refusing the whole run.
    optional: bool = False
    # The memory layout the impl's library keeps q, k, v in: "bhsd" (linbench's, contiguous
    # (B, H, S, D)) or "bshd" (fla's). The runner draws a "bshd" impl's inputs in that layout,
    # untimed, and hands it (B, H, S, D) views of them, as a model holding them so would.
    layout: str = "bhsd"
    # Selected only where named (cosine:compiled), not by its variant's name or ``all``: a
    # compiled impl spends minutes in torch.compile per worker process on a CPU, which a
    # bare ``--variant cosine`` should not cost. ``linbench list`` shows it like any other.
    by_name: bool = False
    # The distribution of the optional library the impl runs on ("fla-core"), as pip names it:
    # a run records its installed version in meta.json.
    library: str | None = None
    # time_complexity as a power of s: 2 for O(s²d), 1 for O(sd²); the sweep's duration
    # estimate counts an impl quadratic where its variant is not with S×S FLOPs. None (a plugin
    # that does not say): read from time_complexity (exponent_in_s).
    time_exponent: int | None = None
    # Packed variable-length batches (linbench/variants/varlen.py). ``packed``: the impl's form
    # for a pack (sequences back to back with their boundaries); None: it runs a pack padded to
    # its longest sequence. ``key_masked``: its form for a padded batch whose pads' keys are
    # masked out, which bidirectional attention needs (causal attention of a right-padded
    # sequence needs none); None: it runs padded packs causal only.
    packed: PackedFn | None = None
    key_masked: MaskedFn | None = None
    # Takes k and v with fewer heads than q itself (grouped-query attention), one state or
    # cache per key/value head. False: attention() repeats k and v to q's heads first, inside
    # the call (linbench/variants/heads.py), and results say "expanded".
    gqa: bool = False
    # Takes v with more heads than q and k itself (GVA, a variant with ``value_heads``): fla's
    # gated delta rule and kda kernels. False: the impl repeats q and k to v's heads inside the
    # call (linbench/variants/heads.py).
    gva: bool = False
    # Returns None when the impl takes these head dims on a device type ("cpu", "cuda"), else
    # why not: limits of one device's kernel (the CUDA kernel's tiles), asked at plan time.
    device_shape_support: Callable[[int, int, str], str | None] | None = None
    # Files outside the linbench package that the impl runs, relative to the repository root
    # (a folder ends in /): no import leads to them, so a change to them is tied to the impl
    # here. The impls on the compiled kernels say "csrc/" (linbench/impl_code.py).
    sources: tuple[str, ...] = ()
    # The fewest tensors of memory_complexity's size a call was measured to hold at its peak
    # (gla:quadratic 4 of B·H·S²·Dk): a sweep of bare names leaves the form out where that
    # passes a worker's memory. None: WORKING_COPIES (linbench/sweep/estimate.py), the least
    # of any form measured, so that no form is left out where it would have fitted.
    working_copies: int | None = None
    # The library and kernel the impl runs, for results.csv's ``backend`` when its call does
    # not say (linbench/variants/backends.py): "linbench csrc", TORCH_COMPILE. None: its
    # library's name, else "torch eager".
    backend: str | None = None
    # What the impl's library takes precomputed, as a model holds it (another library's gate
    # space, constant tensors, a batch's cu_seqlens) and the checks that read values (a gate's
    # floor): fn(q, k, v, *, segments, **params) -> held, made once where a point's inputs are
    # drawn, untimed, and handed to every call as ``held=``; a call given none makes its own.
    hold: HoldFn | None = None

    def __post_init__(self) -> None:
        derive_exponent(self, "time_exponent", self.time_complexity)

    def packing_reason(self, packing: str, causal: bool) -> str | None:
        """Why this impl cannot run a pack ``packing`` ("packed" or "padded") in this masking, or None."""
        if packing == "packed" and self.packed is None:
            return f"{self.name} has no packed form (sequence boundaries): it runs packs padded"
        if packing == "padded" and not causal and self.key_masked is None:
            return f"{self.name} takes no key-padding mask, which a padded bidirectional batch needs"
        return None

    def unavailable_reason(self, device: torch.device) -> str | None:
        """Why this impl cannot run on ``device``, or None when it can."""
        return self.availability(device) if self.availability else None

    def unsupported_reason(self, dim_k: int, dim_v: int, dtype: str, device_type: str | None = None) -> str | None:
        """Why this impl cannot take these head dims or this dtype (on ``device_type``, when
        given), or None when it can."""
        reason = self.shape_support(dim_k, dim_v, dtype) if self.shape_support else None
        if reason is None and device_type is not None and self.device_shape_support is not None:
            reason = self.device_shape_support(dim_k, dim_v, device_type)
        return reason


def exponent_in_s(complexity: str) -> int:
    """The power of the length s in a complexity string: ``O(s²d)`` and ``O(s^2)`` are 2,
    ``O(sd²)`` is 1, ``O(d²)`` and ``-`` are 0. The default of an exponent a plugin leaves
    unset; the built-in variants declare theirs."""
    text = complexity.replace(" ", "").lower()
    if "s²" in text or "s^2" in text:
        return 2
    return 1 if "s" in text else 0


def powers_in_s_and_d(complexity: str) -> tuple[int, int]:
    """The powers of the length s and the head dim d in a complexity string: ``O(s²d)`` is
    (2, 1), ``O(s²)`` (2, 0), ``O(sd)`` (1, 1), ``O(d²)`` (0, 2); what a memory declaration
    says an impl holds, in elements per batch and head."""
    text = complexity.replace(" ", "").lower()
    d_power = 2 if ("d²" in text or "d^2" in text) else 1 if "d" in text else 0
    return exponent_in_s(complexity), d_power


def derive_exponent(declared: object, name: str, complexity: str) -> None:
    """Fill the exponent ``name`` from ``complexity`` when it was not declared (frozen dataclass)."""
    if getattr(declared, name) is None:
        object.__setattr__(declared, name, exponent_in_s(complexity))
