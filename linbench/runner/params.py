"""--param settings resolved against the registry and the run's impls (or decoders).

Everything wrong is found before a run folder exists: an unknown variant, impl, decoder or
parameter name, a value of the wrong type, or a target that is not part of the run. A
variant-wide setting reaches every impl of the variant in the run that takes the parameter;
an impl's own setting wins over it; of two settings of one name and target the last wins.
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any

from linbench.runner.kind_protocol import Kind
from linbench.runner.run_kind import RUN
from linbench.sweep.params import ParamError, ParamSetting, convert, format_params, parse_param
from linbench.variants.declarations import Param
from linbench.variants.registry import get_variant
from linbench.variants.variant import Variant

Pair = tuple[str, str]


def resolve_params(texts: Iterable[str], pairs: Iterable[Pair], kind: Kind = RUN) -> dict[Pair, dict[str, Any]]:
    """(variant, impl) → {parameter: value} for every impl that a setting reaches."""
    pairs = list(pairs)
    settings = [parse_param(text) for text in texts]
    resolved: dict[Pair, dict[str, Any]] = {}
    # Variant-wide settings first, so that an impl's own setting overrides them.
    for setting in sorted(settings, key=lambda s: s.impl is not None):
        try:
            variant = get_variant(setting.variant)
        except ValueError as exc:
            raise ParamError(f"--param {setting.text}: {exc}") from None
        reached = _reached(setting, variant, pairs, kind)
        takers = [(pair, specs[setting.name]) for pair, specs in reached if setting.name in specs]
        if not takers:
            known = sorted({name for _, specs in reached for name in specs})
            raise ParamError(
                f"--param {setting.text}: {setting.target} has no parameter {setting.name!r}; "
                f"it takes: {', '.join(known) or 'no parameters'}"
            )
        for pair, spec in takers:
            value = convert(setting, spec.default)
            problem = spec.problem(value)
            if problem:  # a value the parameter does not take (a decay of 1.5) is refused here
                raise ParamError(f"--param {setting.text}: {problem}")
            resolved.setdefault(pair, {})[setting.name] = value
    return resolved


def _reached(
    setting: ParamSetting, variant: Variant, pairs: list[Pair], kind: Kind
) -> list[tuple[Pair, dict[str, Param]]]:
    """The run's impls (decoders) the setting names, each with the parameters it takes."""
    if setting.impl is not None:
        try:
            kind.param_specs(variant, setting.impl)  # ValueError naming the impls (decoders)
        except ValueError as exc:
            raise ParamError(f"--param {setting.text}: {exc}") from None
        targets = [(variant.name, setting.impl)]
    else:
        targets = [pair for pair in pairs if pair[0] == variant.name]
    missing = [f"{v}:{i}" for v, i in targets if (v, i) not in pairs]
    if missing or not targets:
        what = missing[0] if missing else variant.name
        raise ParamError(f"--param {setting.text}: {what} is not part of this run")
    return [(pair, kind.param_specs(variant, pair[1])) for pair in targets]


def non_default(pair: Pair, values: dict[str, Any], kind: Kind = RUN) -> str:
    """``k=v;k=v`` of the values that differ from the parameters' defaults (results.csv)."""
    specs = kind.param_specs(get_variant(pair[0]), pair[1])
    changed = {
        name: value for name, value in values.items() if specs[name].default is None or value != specs[name].default
    }
    return format_params(changed)


__all__ = ["ParamError", "non_default", "resolve_params"]
