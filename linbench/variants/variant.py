"""A variant: an attention function with its impls, reference, parameters and cost model.

What it is declared from (parameters, impls, decoders) is in linbench/variants/declarations.py;
how a variant is registered and found, in linbench/variants/registry.py.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from types import MappingProxyType
from typing import TYPE_CHECKING, Any

from linbench.errors import ImplUnavailableError
from linbench.shape import MODES
from linbench.variants.declarations import Decoder, FlopsFn, Impl, Param, StreamFn, derive_exponent

if TYPE_CHECKING:
    import torch

    from linbench.variants.extra_inputs import ExtraInput

MASKINGS = ("causal", "bidirectional")


@dataclass(frozen=True)
class Variant:
    """An attention function with its impls, reference, parameters and cost model."""

    name: str
    summary: str
    impl_list: tuple[Impl, ...]
    reference: str
    param_specs: tuple[Param, ...]
    flop_formula: FlopsFn
    time_complexity: str
    memory_complexity: str
    # Impl names tried in order by impl="auto" (the first one available wins).
    auto_order: tuple[str, ...] = ()
    source: str = ""
    stream: StreamFn | None = None
    # How the variant generates token by token (linbench decode); a variant with a stream
    # but no decoders gets a "recurrent" decoder made from its stream.
    decoder_list: tuple[Decoder, ...] = ()
    # time_complexity as a power of s (None: read from it, as Impl.time_exponent).
    time_exponent: int | None = None
    # The maskings the variant computes: ("causal",) for one defined only causally (a decay
    # or retention form), ("bidirectional",), or both. check, run and list honour it.
    masking: tuple[str, ...] = MASKINGS
    # Tensors the impls take beside q, k and v, by keyword (a gated variant's log-gates, the
    # delta rule's β): bound like parameters, but required, and drawn by the workload.
    extra_inputs: tuple[ExtraInput, ...] = ()
    # Settings ``linbench check`` checks every impl at besides the defaults, each a mapping of
    # parameters or draw settings: a gated variant's strong gates ({"gate_regime": "strong"}).
    check_params: tuple[Mapping[str, Any], ...] = ()
    # v may have more heads than q and k (GVA: the state, gates and β per value head), in
    # every impl, stream and decoder (linbench/variants/heads.py); False: one line refuses it.
    value_heads: bool = False
    _impls: Mapping[str, Impl] = field(init=False, repr=False, compare=False)
    _decoders: Mapping[str, Decoder] = field(init=False, repr=False, compare=False)

    def __post_init__(self) -> None:
        derive_exponent(self, "time_exponent", self.time_complexity)
        if not self.masking or any(m not in MASKINGS for m in self.masking):
            raise ValueError(
                f"variant {self.name!r}: masking {', '.join(map(repr, self.masking)) or '()'}; "
                "give 'causal', 'bidirectional' or both"
            )
        impls = {impl.name: impl for impl in self.impl_list}
        if len(impls) != len(self.impl_list):
            raise ValueError(f"variant {self.name!r} declares an impl name twice")
        if self.reference not in impls:
            raise ValueError(f"variant {self.name!r}: reference {self.reference!r} is not one of its impls")
        unknown_auto = [name for name in self.auto_order if name not in impls]
        if unknown_auto:
            raise ValueError(f"variant {self.name!r}: auto_order names unknown impls {unknown_auto}")
        object.__setattr__(self, "_impls", MappingProxyType(impls))
        declared = self.decoder_list or _stream_decoders(self.stream)
        decoders = {decoder.name: decoder for decoder in declared}
        if len(decoders) != len(declared):
            raise ValueError(f"variant {self.name!r} declares a decoder name twice")
        object.__setattr__(self, "_decoders", MappingProxyType(decoders))
        clashing = {extra.name for extra in self.extra_inputs} & {p.name for p in self.param_specs}
        if clashing:
            raise ValueError(f"variant {self.name!r}: {sorted(clashing)} are both parameters and extra inputs")

    def masking_reason(self, causal: bool) -> str | None:
        """Why the variant does not compute this masking ("decay is causal only"), or None."""
        if ("causal" if causal else "bidirectional") in self.masking:
            return None
        return f"{self.name} is {self.masking[0]} only"

    @property
    def draw_params(self) -> tuple[Param, ...]:
        """How a workload draws the extra inputs, set like parameters (``--param
        gla.gate_regime=strong``) but never passed to an impl; none without extra inputs."""
        if not self.extra_inputs:
            return ()
        from linbench.variants.extra_inputs import draw_params

        return draw_params(self.extra_inputs)

    @property
    def impls(self) -> Mapping[str, Impl]:
        """Impl name → impl, in declaration order."""
        return self._impls

    @property
    def decoders(self) -> Mapping[str, Decoder]:
        """Decoder name → decoder (empty when the variant cannot generate token by token)."""
        return self._decoders

    def decoder(self, name: str) -> Decoder:
        """The decoder called ``name``; ValueError saying which decoders exist when there is none."""
        if name in self._decoders:
            return self._decoders[name]
        if not self._decoders:
            raise ValueError(f"{self.name} cannot decode: it has no recurrent form or KV cache (no decoder)")
        what = "an impl, not a decoder" if name in self._impls else "no decoder"
        raise ValueError(f"{self.name}:{name} is {what}; decoders of {self.name}: {', '.join(self._decoders)}")

    def length_params(self, length: int, given: Mapping[str, Any]) -> dict[str, Any]:
        """The variant's parameters with those derived from S, when not given, fixed to ``length``;
        extra inputs pass through where given (a decoder's workload draws them per block)."""
        bound = self._bind_parameters(None, given)
        bound |= {extra.name: given[extra.name] for extra in self.extra_inputs if extra.name in given}
        for spec in self.param_specs:
            if spec.from_length and bound[spec.name] is None:
                bound[spec.name] = length
        return bound

    @property
    def params(self) -> Mapping[str, Any]:
        """Variant parameter name → default (None: derived from the input)."""
        return MappingProxyType({p.name: p.default for p in self.param_specs})

    def flops(self, batch: int, heads: int, seq: int, dim_k: int, dim_v: int, causal: bool, mode: str) -> float:
        """Floating-point operations of one call, by the variant's counting convention."""
        if mode not in MODES:
            raise ValueError(f"unknown mode {mode!r}; modes are {', '.join(MODES)}")
        return float(self.flop_formula(batch, heads, seq, dim_k, dim_v, causal, mode))

    def impl(self, name: str) -> Impl:
        """The impl called ``name``; ValueError listing the impls when there is none."""
        try:
            return self._impls[name]
        except KeyError:
            raise ValueError(f"variant {self.name!r} has no impl {name!r}; impls: {', '.join(self._impls)}") from None

    def resolve_impl(self, name: str, device: torch.device) -> Impl:
        """The impl to run for ``name`` ("auto" or an impl name) on ``device``.

        Raises ValueError for an unknown name and ImplUnavailableError when it cannot run here.
        """
        if name == "auto":
            order = self.auto_order or tuple(self._impls)
            reasons = []
            for candidate in order:
                reason = self._impls[candidate].unavailable_reason(device)
                if reason is None:
                    return self._impls[candidate]
                reasons.append(f"{candidate}: {reason}")
            raise ImplUnavailableError(f"{self.name}: no impl is available on {device} ({'; '.join(reasons)})")
        impl = self.impl(name)
        reason = impl.unavailable_reason(device)
        if reason is not None:
            raise ImplUnavailableError(f"{self.name}:{impl.name} is unavailable on {device}: {reason}")
        return impl

    def bind_params(self, impl: Impl | None, given: Mapping[str, Any]) -> dict[str, Any]:
        """Every parameter ``impl`` takes (the variant's alone when None), given values over
        defaults, and the extra inputs; unknown names, values a parameter does not take
        (Param.check) and missing extra inputs raise ValueError (listing the known ones, naming
        the missing)."""
        return self._bind_parameters(impl, given) | self._bind_extra_inputs(given)

    def _bind_parameters(self, impl: Impl | None, given: Mapping[str, Any]) -> dict[str, Any]:
        specs = (*self.param_specs, *(impl.params if impl else ()))
        known = {p.name for p in specs} | {extra.name for extra in self.extra_inputs}
        unknown = sorted(set(given) - known)
        if unknown:
            target = f"{self.name}:{impl.name}" if impl else self.name
            raise ValueError(
                f"unknown parameter(s) {', '.join(unknown)} for {target}; "
                f"it takes: {', '.join(sorted(known)) or 'no parameters'}"
            )
        for spec in specs:  # a value the parameter does not take, given from Python as from --param
            problem = spec.problem(given[spec.name]) if spec.name in given else None
            if problem:
                raise ValueError(problem)
        return {p.name: given.get(p.name, p.default) for p in specs}

    def _bind_extra_inputs(self, given: Mapping[str, Any]) -> dict[str, Any]:
        """The extra inputs out of ``given``; ValueError naming those missing (they have no default)."""
        missing = [extra for extra in self.extra_inputs if given.get(extra.name) is None]
        if missing:
            wanted = "; ".join(f"{extra.name}: {extra.summary}" for extra in missing)
            raise ValueError(f"{self.name} needs the extra input(s) {wanted}")
        return {extra.name: given[extra.name] for extra in self.extra_inputs}

    def stream_attention(
        self, q: torch.Tensor, k: torch.Tensor, v: torch.Tensor, *, state: Any = None, **params: Any
    ) -> tuple[torch.Tensor, Any]:
        """Causal attention over new tokens continuing from ``state`` (None: the start).

        Returns the outputs (in q's dtype) and the state after the last token, so a
        sequence fed in pieces gives the same outputs as fed whole. Parameters derived
        from the length (cosine's seq_len, cosformer's M) must then be given explicitly.
        """
        from linbench.variants.validation import check_qkv

        if self.stream is None:
            raise ImplUnavailableError(f"{self.name} has no recurrent form to stream through")
        check_qkv(q, k, v)
        out, new_state = self.stream(q, k, v, state=state, **self.bind_params(None, params))
        return out.to(q.dtype), new_state


def _stream_decoders(stream: StreamFn | None) -> tuple[Decoder, ...]:
    """A plugin that declares only a stream decodes through it, prefill included (token by token)."""
    if stream is None:
        return ()
    # Its costs are not declared ("-"); planning takes the state and step as constant in s.
    summary = "the variant's stream, prefill included"
    return (Decoder.from_stream("recurrent", summary, stream, "-", "-", state_exponent=0, step_exponent=0),)
