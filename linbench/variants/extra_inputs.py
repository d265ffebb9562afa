"""Inputs a variant takes beside q, k and v: a gated variant's log-gates, the delta rule's β.

They are declared as data, so that whatever draws a workload (a benchmark run, the correctness
gate, a test) can draw them, check them and cut them into pieces without knowing the variant's
maths: the keyword the impls take the tensor by, its shape relative to q's (B, H, S, Dk), the
dtype it comes in, how realistic values are drawn, whether gradients reach it, and the range it
must lie in. Like q, k and v, an extra input is (batch, heads) first and sequence next.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass, replace
from functools import partial
from typing import Any

import torch

from linbench.variants.declarations import Param

# Shape names and the (B, H, S, Dk) axes each keeps.
SHAPES: Mapping[str, str] = {
    "per_head": "(B, H)",
    "per_token": "(B, H, S)",
    "per_token_channel": "(B, H, S, Dk)",
    # One per value channel (gdn2's write gate): its size is v's head dim, which draws and
    # checks are given as ``dim_v``.
    "per_token_value": "(B, H, S, Dv)",
}
# "like_q": the dtype under test. "fp32_or_wider": fp32 for fp16/bf16 q, else q's dtype, since a
# log-gate is summed over the sequence and 8 bits of mantissa lose the sum (the kernels that
# train these models keep their gates in fp32 for the same reason).
DTYPE_RULES = ("like_q", "fp32_or_wider")
# How strongly a gate forgets, or how a model computes it: every draw function takes one of
# these (those of an input that does not depend on it ignore it). "weak" and "strong" are
# every gate's; "production" (the gate as Mamba2, Gated DeltaNet and Kimi Linear compute it
# from A_log and dt_bias) and "lower-bound" (KDA's gate bounded below at −5, Kimi K3 and
# GLM-5.3-Flash) are those of the gates that declare them (``ExtraInput.regimes``).
REGIMES = ("weak", "strong", "production", "lower-bound")
# The regimes every gate takes (a plugin's draw_fn is asked for these alone).
BASIC_REGIMES = ("weak", "strong")

# Draws an input of the given sizes: fp64 on the CPU from the generator, so that a workload is
# the same on every device; ``ExtraInput.draw`` moves it to the device and dtype.
DrawFn = Callable[[tuple[int, ...], torch.Generator, str], torch.Tensor]
# None when every value is in range, else what is wrong, as the end of a sentence naming the input.
RangeFn = Callable[[torch.Tensor], "str | None"]


@dataclass(frozen=True)
class ExtraInput:
    """One tensor a variant takes beside q, k and v, by keyword ``name``."""

    name: str
    shape: str  # a key of SHAPES
    summary: str  # what it is and the range it lies in, for listings and errors
    draw_fn: DrawFn
    range_fn: RangeFn
    dtype_rule: str = "like_q"
    differentiable: bool = True  # gradients reach it (the correctness gate checks them)
    distribution: str = ""  # how draw_fn draws it, per regime, for the docs
    # A gate: its draw depends on the regime, and a constant ``log_gate`` replaces it
    # (DRAW_PARAMS). β is not one: how much a token writes is not how fast the state forgets.
    follows_regime: bool = True
    # The regimes a gate's draw_fn takes (every one of REGIMES for an input that ignores it).
    regimes: tuple[str, ...] = BASIC_REGIMES

    def __post_init__(self) -> None:
        if self.shape not in SHAPES:
            raise ValueError(f"extra input {self.name!r}: shape {self.shape!r} is not one of {', '.join(SHAPES)}")
        if self.dtype_rule not in DTYPE_RULES:
            raise ValueError(f"extra input {self.name!r}: dtype rule {self.dtype_rule!r} is not one of {DTYPE_RULES}")

    def sizes(self, batch: int, heads: int, seq: int, dim_k: int, dim_v: int | None = None) -> tuple[int, ...]:
        """The input's shape for q of shape (batch, heads, seq, dim_k) and v's head dim ``dim_v``
        (ValueError when an input per value channel is not told it)."""
        if self.shape == "per_token_value":
            if dim_v is None:
                raise ValueError(f"extra input {self.name!r} is per value channel: its size needs v's head dim")
            return (batch, heads, seq, dim_v)
        return {"per_head": (batch, heads), "per_token": (batch, heads, seq)}.get(
            self.shape, (batch, heads, seq, dim_k)
        )

    def dtype_for(self, q_dtype: torch.dtype) -> torch.dtype:
        """The dtype the input comes in when q is ``q_dtype``."""
        if self.dtype_rule == "fp32_or_wider" and q_dtype in (torch.float16, torch.bfloat16):
            return torch.float32
        return q_dtype

    def draw(
        self,
        batch: int,
        heads: int,
        seq: int,
        dim_k: int,
        *,
        generator: torch.Generator,
        device: torch.device | str,
        dtype: torch.dtype,
        regime: str = "weak",
        dim_v: int | None = None,
    ) -> torch.Tensor:
        """Realistic values for q of this shape (v's head dim ``dim_v``) and ``dtype`` (see
        ``distribution``)."""
        if regime not in REGIMES:
            raise ValueError(f"unknown regime {regime!r} for {self.name}; regimes: {', '.join(REGIMES)}")
        if self.follows_regime and regime not in self.regimes:
            raise ValueError(f"{self.name} has no gate profile {regime!r}; it takes {', '.join(self.regimes)}")
        values = self.draw_fn(self.sizes(batch, heads, seq, dim_k, dim_v), generator, regime)
        return values.to(device=device, dtype=self.dtype_for(dtype))

    def problem(
        self, value: object, q: torch.Tensor, *, read_values: bool = True, dim_v: int | None = None
    ) -> str | None:
        """None when ``value`` can go with ``q`` (and v's head dim ``dim_v``; not given, an input
        per value channel is held to (B, H, S) only), else one line saying what is wrong. Its
        range is checked only with ``read_values`` (reading values synchronises with the device)."""
        if not isinstance(value, torch.Tensor):
            return f"{self.name} must be a torch.Tensor, got {type(value).__name__}"
        if self.shape == "per_token_value" and dim_v is None:
            dim_v = value.shape[-1] if value.ndim == 4 else -1
        batch, heads, seq, dim_k = q.shape
        want = self.sizes(batch, heads, seq, dim_k, dim_v)
        if tuple(value.shape) != want:
            return f"{self.name} must have shape {SHAPES[self.shape]} = {want}; got {tuple(value.shape)}"
        if value.dtype != self.dtype_for(q.dtype):
            return f"{self.name} must be {self.dtype_for(q.dtype)} for {q.dtype} q; got {value.dtype}"
        if value.device != q.device:
            return f"{self.name} must be on q's device {q.device}; got {value.device}"
        complaint = self.range_fn(value.detach()) if read_values else None
        return f"{self.name} {complaint}" if complaint else None

    def tokens(self, value: torch.Tensor, start: int, stop: int) -> torch.Tensor:
        """The part of ``value`` that goes with tokens start..stop−1 (all of it when per head)."""
        if self.shape == "per_head":
            return value
        if self.shape == "per_token":
            return value[..., start:stop]
        return value[..., start:stop, :]


def check_extra_inputs(
    owner: str,
    declared: Iterable[ExtraInput],
    given: Mapping[str, object],
    q: torch.Tensor,
    *,
    read_values: bool = True,
    dim_v: int | None = None,
) -> None:
    """Raise ValueError, one line, unless ``given`` holds every declared input, each fit for ``q``
    (and v's head dim ``dim_v``).

    Reading the values' range costs a device synchronisation: call it once per workload, not
    inside a timed loop (``read_values=False`` checks shapes, dtypes and devices only).
    """
    inputs = tuple(declared)
    missing = [extra for extra in inputs if given.get(extra.name) is None]
    if missing:
        wanted = "; ".join(f"{extra.name}: {extra.summary}" for extra in missing)
        raise ValueError(f"{owner} needs the extra input(s) {wanted}")
    for extra in inputs:
        problem = extra.problem(given[extra.name], q, read_values=read_values, dim_v=dim_v)
        if problem:
            raise ValueError(f"{owner}: {problem}")


def probe_draws(owner: str, declared: Iterable[ExtraInput]) -> None:
    """Raise ValueError, one line, when an input's ``draw_fn`` draws what its own declaration
    refuses (the wrong shape, values out of range) or raises: drawn once per regime at a small
    shape, before a run, so that a plugin's mistake is a refusal, not an error in every point."""
    q, dim_v = torch.zeros(1, 2, 3, 4), 5
    for extra in declared:
        for regime in extra.regimes if extra.follows_regime else BASIC_REGIMES:
            try:
                gen = torch.Generator().manual_seed(0)
                value = extra.draw(*q.shape, generator=gen, device="cpu", dtype=q.dtype, regime=regime, dim_v=dim_v)
            except Exception as exc:  # a plugin's draw_fn: whatever it raises is its mistake
                raise ValueError(
                    f"{owner}: drawing {extra.name} ({regime} regime) raised {type(exc).__name__}: {exc}"
                ) from exc
            problem = extra.problem(value, q, dim_v=dim_v)
            if problem:
                raise ValueError(
                    f"{owner}: its draw_fn for {extra.name} ({regime} regime) drew what it refuses: {problem}"
                )


def take_tokens(declared: Iterable[ExtraInput], given: Mapping[str, Any], start: int, stop: int) -> dict[str, Any]:
    """``given`` with every declared extra input cut to tokens start..stop−1; other entries as they are.

    How a decoder feeds a sequence in pieces: q, k and v are cut along S, and so must the inputs
    that have one value per token.
    """
    by_name = {extra.name: extra for extra in declared}
    return {
        name: by_name[name].tokens(value, start, stop) if name in by_name and isinstance(value, torch.Tensor) else value
        for name, value in given.items()
    }


def _regime_problem(value: Any, regimes: tuple[str, ...] = REGIMES) -> str | None:
    return None if value in regimes else f"must be one of {', '.join(regimes)}; got {value!r}"


def _log_gate_problem(value: Any) -> str | None:
    number = value if isinstance(value, int | float) and not isinstance(value, bool) else None
    if number is None or number != number or number > 0 or number == float("-inf"):
        return f"must be a finite number ≤ 0 (a log-gate, log of a decay in (0, 1]); got {value!r}"
    return None


# How a workload draws the gates, set like parameters (--param gla.gate_regime=strong) and
# recorded in results.csv's params column, but never passed to an impl.
GATE_REGIME = Param(
    "gate_regime",
    "weak",
    "how fast the drawn gates forget: weak (log σ(x)/16, as trained GLA layers) or strong (log σ(x))",
    check=_regime_problem,
)
LOG_GATE = Param(
    "log_gate",
    None,
    "a number ≤ 0: every log-gate set to it instead of drawn (a constant decay e^log_gate per token)",
    check=_log_gate_problem,
)
DRAW_PARAMS = (GATE_REGIME, LOG_GATE)


@dataclass(frozen=True)
class DrawSettings:
    """How the extra inputs of one workload are drawn (DRAW_PARAMS' values)."""

    regime: str = "weak"
    log_gate: float | None = None  # every gate set to it; None: drawn

    def describe(self) -> str:
        """``gate_regime=strong``, ``log_gate=-0.1``: the settings that differ from the defaults."""
        parts = [f"{GATE_REGIME.name}={self.regime}"] if self.regime != GATE_REGIME.default else []
        return ";".join(parts + ([f"{LOG_GATE.name}={self.log_gate:g}"] if self.log_gate is not None else []))


def draw_params(declared: Iterable[ExtraInput]) -> tuple[Param, ...]:
    """The draw settings that mean something for these inputs: DRAW_PARAMS when one is a gate,
    its gate_regime taking the regimes every gate among them takes (a --param naming another
    is refused before anything runs)."""
    gates = [extra for extra in declared if extra.follows_regime]
    if not gates:
        return ()
    regimes = tuple(regime for regime in REGIMES if all(regime in gate.regimes for gate in gates))
    more = regimes[len(BASIC_REGIMES) :]
    help_text = GATE_REGIME.help + (f"; also {', '.join(more)} (as models compute the gate)" if more else "")
    regime = replace(GATE_REGIME, help=help_text, check=partial(_regime_problem, regimes=regimes))
    return (regime, LOG_GATE)


def split_draw_settings(params: Mapping[str, Any]) -> tuple[DrawSettings, dict[str, Any]]:
    """The draw settings in ``params`` (ValueError, one line, for a value they do not take),
    and the parameters left for the impl."""
    for spec in DRAW_PARAMS:
        problem = spec.problem(params.get(spec.name))
        if problem:
            raise ValueError(problem)
    settings = DrawSettings(params.get(GATE_REGIME.name) or GATE_REGIME.default, params.get(LOG_GATE.name))
    return settings, {name: value for name, value in params.items() if name not in {p.name for p in DRAW_PARAMS}}


def draw_extra_inputs(
    declared: Iterable[ExtraInput],
    shape: tuple[int, int, int, int],
    *,
    generator: torch.Generator,
    device: torch.device | str,
    dtype: torch.dtype,
    settings: DrawSettings | None = None,
    dim_v: int | None = None,
) -> dict[str, torch.Tensor]:
    """Every declared input for q of ``shape`` (B, H, S, Dk) and v's head dim ``dim_v`` in
    ``dtype``, by name: drawn in the settings' regime from ``generator`` (a CPU generator), a
    gate set to ``log_gate`` when given."""
    settings = settings or DrawSettings()
    drawn = {}
    for extra in declared:
        value = extra.draw(*shape, generator=generator, device=device, dtype=dtype, regime=settings.regime, dim_v=dim_v)
        if extra.follows_regime and settings.log_gate is not None:
            value = torch.full_like(value, settings.log_gate)
        drawn[extra.name] = value
    return drawn


def seq_major(extra: ExtraInput, value: torch.Tensor) -> torch.Tensor:
    """``value`` with the same values, its memory laid out sequence first, (B, S, H[, Dk]), as a
    library keeping (B, S, H, D) tensors (fla) holds it; seen as (B, H, S[, Dk]) like q."""
    if extra.shape == "per_head":
        return value
    return value.transpose(1, 2).contiguous().transpose(1, 2)
