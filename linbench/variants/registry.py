"""The variant registry: what an attention variant is, and how one is found.

A *variant* is a mathematical function (softmax, cosine, ...). An *impl* is one way to
compute it (naive, quadratic, chunked, ...). Variants know maths, never measuring: the
runner and reports only read the metadata declared here.
"""

from __future__ import annotations

import importlib
import importlib.metadata
import logging
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from types import MappingProxyType
from typing import TYPE_CHECKING, Any

from linbench.errors import ImplUnavailableError
from linbench.shape import MODES

if TYPE_CHECKING:
    import torch

    from linbench.variants.extra_inputs import ExtraInput

log = logging.getLogger(__name__)

ENTRY_POINT_GROUP = "linbench.variants"
MASKINGS = ("causal", "bidirectional")

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

    def __post_init__(self) -> None:
        _derive(self, "state_exponent", self.state_memory)
        _derive(self, "step_exponent", self.step_time)

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
    # Returns None when the impl takes these head dims on a device type ("cpu", "cuda"), else
    # why not: limits of one device's kernel (the CUDA kernel's tiles), asked at plan time.
    device_shape_support: Callable[[int, int, str], str | None] | None = None

    def __post_init__(self) -> None:
        _derive(self, "time_exponent", self.time_complexity)

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
    _impls: Mapping[str, Impl] = field(init=False, repr=False, compare=False)
    _decoders: Mapping[str, Decoder] = field(init=False, repr=False, compare=False)

    def __post_init__(self) -> None:
        _derive(self, "time_exponent", self.time_complexity)
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
        defaults, and the extra inputs; unknown names and missing extra inputs raise ValueError
        (listing the known ones, naming the missing)."""
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


def exponent_in_s(complexity: str) -> int:
    """The power of the length s in a complexity string: ``O(s²d)`` and ``O(s^2)`` are 2,
    ``O(sd²)`` is 1, ``O(d²)`` and ``-`` are 0. The default of an exponent a plugin leaves
    unset; the built-in variants declare theirs."""
    text = complexity.replace(" ", "").lower()
    if "s²" in text or "s^2" in text:
        return 2
    return 1 if "s" in text else 0


def _derive(declared: Impl | Decoder | Variant, name: str, complexity: str) -> None:
    """Fill the exponent ``name`` from ``complexity`` when it was not declared (frozen dataclass)."""
    if getattr(declared, name) is None:
        object.__setattr__(declared, name, exponent_in_s(complexity))


_REGISTRY: dict[str, Variant] = {}
_plugins_loaded = False


def register_variant(variant: Variant, *, replace: bool = False) -> Variant:
    """Add ``variant`` to the registry; a name already taken raises unless ``replace``."""
    if not isinstance(variant, Variant):
        raise TypeError(f"register_variant expects a Variant, got {type(variant).__name__}")
    if variant.name in _REGISTRY and not replace:
        raise ValueError(f"a variant called {variant.name!r} is already registered")
    _REGISTRY[variant.name] = variant
    return variant


def unregister_variant(name: str) -> None:
    """Remove a variant (plugins and tests use this to clean up)."""
    _REGISTRY.pop(name, None)


BUILTIN_VARIANTS = (
    *("softmax", "cosine", "cosformer", "heinsen", "linear"),
    *("retention", "simple-gla", "gla", "deltanet", "gated-deltanet"),
)
# The package of each built-in variant whose name is not its package's (a hyphen).
_BUILTIN_PACKAGES = {
    "retention": "gated.retention",
    "simple-gla": "gated.simple_gla",
    "gla": "gated.gla",
    "deltanet": "gated.deltanet",
    "gated-deltanet": "gated.gated_deltanet",
}


def load_builtin_variants() -> None:
    """Import every built-in variant's package, which registers it. Done lazily so importing
    the registry (and so `linbench --help`) stays cheap; a worker's fork server calls it once,
    so that the workers it forks hold the variants from their start."""
    for name in BUILTIN_VARIANTS:
        importlib.import_module(f"linbench.variants.{_BUILTIN_PACKAGES.get(name, name)}")


def _load_entry_point_plugins() -> None:
    """Register variants that installed packages expose under the ``linbench.variants`` group.

    An entry point names a Variant, or a callable returning a Variant or a list of them.
    A broken plugin is logged and skipped: it must not take the built-in variants down.
    """
    for entry in importlib.metadata.entry_points(group=ENTRY_POINT_GROUP):
        try:
            obj = entry.load()
            produced = obj() if callable(obj) and not isinstance(obj, Variant) else obj
            for variant in produced if isinstance(produced, list | tuple) else [produced]:
                register_variant(variant, replace=True)
        except Exception as exc:  # any plugin failure is reported, never raised
            log.warning("linbench plugin %s failed to load: %s", entry.name, exc)


def _ensure_loaded() -> None:
    global _plugins_loaded
    load_builtin_variants()
    if not _plugins_loaded:
        _plugins_loaded = True
        _load_entry_point_plugins()


def list_variants() -> list[str]:
    """Names of every registered variant: the built-in ones in their order (whichever was
    imported first), then the plugins' in the order they registered."""
    _ensure_loaded()
    builtin = [name for name in BUILTIN_VARIANTS if name in _REGISTRY]
    return builtin + [name for name in _REGISTRY if name not in BUILTIN_VARIANTS]


def optional_libraries() -> list[str]:
    """The distributions the registered impls run on (``Impl.library``), each named once."""
    _ensure_loaded()
    declared = (impl.library for variant in _REGISTRY.values() for impl in variant.impl_list if impl.library)
    return list(dict.fromkeys(declared))


def get_variant(name: str) -> Variant:
    """The variant called ``name``; ValueError listing the variants when there is none."""
    _ensure_loaded()
    try:
        return _REGISTRY[name]
    except KeyError:
        raise ValueError(f"unknown variant {name!r}; variants: {', '.join(_REGISTRY)}") from None
