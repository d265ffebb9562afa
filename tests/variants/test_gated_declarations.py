"""The gated families' declarations, field by field, against a record of them (CPU).

Each family declares what is its own (a ``GatedFamily``) and one shared function registers it
(linbench/variants/gated/family.py); this pins what that registers: every variant's names,
impls, parameters, masking, exponents, decoders and extra inputs. A deliberate change to a family rewrites the record:
``python tests/variants/test_gated_declarations.py > tests/variants/gated_declarations.json``.
"""

from __future__ import annotations

import functools
import json
from pathlib import Path
from typing import Any

from linbench.variants.gated import PACKAGES, gated_variants
from linbench.variants.registry import Decoder, Impl, Param, Variant, get_variant

RECORD = Path(__file__).with_name("gated_declarations.json")


def _callable(fn: Any) -> str | None:
    """Where a function was defined (a partial: its function and bound keywords); None for None."""
    if fn is None:
        return None
    if isinstance(fn, functools.partial):
        keywords = ", ".join(f"{key}={value!r}" for key, value in sorted(fn.keywords.items()))
        return f"partial({_callable(fn.func)}, {keywords})"
    return f"{fn.__module__}.{fn.__qualname__}"


def _param(param: Param) -> dict[str, Any]:
    return {
        "name": param.name,
        "default": repr(param.default),
        "help": param.help,
        "from_length": param.from_length,
        "check": _callable(param.check),
        "learnable": _callable(param.learnable),
        "device_check": _callable(param.device_check),
    }


def _impl(impl: Impl) -> dict[str, Any]:
    return {
        "name": impl.name,
        "fn": _callable(impl.fn),
        "summary": impl.summary,
        "time_complexity": impl.time_complexity,
        "memory_complexity": impl.memory_complexity,
        "time_exponent": impl.time_exponent,
        "params": [_param(p) for p in impl.params],
        "availability": impl.availability is not None,
        "shape_support": impl.shape_support is not None,
        "device_shape_support": impl.device_shape_support is not None,
        "optional": impl.optional,
        "layout": impl.layout,
        "by_name": impl.by_name,
        "library": impl.library,
        "packed": _callable(impl.packed),
        "key_masked": _callable(impl.key_masked),
        "gqa": impl.gqa,
        "gva": impl.gva,
    }


def _decoder(decoder: Decoder) -> dict[str, Any]:
    return {
        "name": decoder.name,
        "summary": decoder.summary,
        "prefill": _callable(decoder.prefill),
        "step": _callable(decoder.step),
        "state_memory": decoder.state_memory,
        "step_time": decoder.step_time,
        "state_exponent": decoder.state_exponent,
        "step_exponent": decoder.step_exponent,
        "gqa": decoder.gqa,
    }


def describe(variant: Variant) -> dict[str, Any]:
    """A variant's declaration as plain data (functions by where they were defined)."""
    return {
        "name": variant.name,
        "summary": variant.summary,
        "impls": [_impl(impl) for impl in variant.impl_list],
        "reference": variant.reference,
        "params": [_param(p) for p in variant.param_specs],
        "flop_formula": _callable(variant.flop_formula),
        "time_complexity": variant.time_complexity,
        "memory_complexity": variant.memory_complexity,
        "time_exponent": variant.time_exponent,
        "auto_order": list(variant.auto_order),
        "source": variant.source,
        "stream": _callable(variant.stream),
        "decoders": [_decoder(d) for d in variant.decoder_list],
        "masking": list(variant.masking),
        "extra_inputs": [extra.name for extra in variant.extra_inputs],
        "draw_params": [_param(p) for p in variant.draw_params],
        "check_params": [dict(setting) for setting in variant.check_params],
        "value_heads": variant.value_heads,
    }


def current() -> list[dict[str, Any]]:
    return [describe(variant) for variant in gated_variants()]


def test_the_gated_families_declare_what_the_record_says() -> None:
    assert current() == json.loads(RECORD.read_text(encoding="utf-8"))


def test_the_registry_holds_the_declared_variants() -> None:
    """Each family's declaration is the variant the registry hands out under its name."""
    for variant in gated_variants():
        assert get_variant(variant.name) is variant
    assert [variant.name for variant in gated_variants()] == list(PACKAGES)


if __name__ == "__main__":
    print(json.dumps(current(), indent=1, ensure_ascii=False))
