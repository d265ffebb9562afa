"""``--param TARGET.NAME=VALUE``: an impl's parameter, set for a run.

TARGET is a variant (``cosine.norm_const=0.3``: every impl of cosine in the run that takes
``norm_const``) or one impl (``cosine:kernel.chunk_size=128``, ``softmax:sdpa.backend=flash``);
for ``linbench decode`` a decoder, which takes its variant's parameters. The value is read
as the parameter's default is typed: an integer, a number, true/false or text.
runner/params.py resolves the settings against the registry and the run's impls.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

FORM = "TARGET.NAME=VALUE (cosine:chunked.chunk_size=64, cosine.norm_const=0.3)"


class ParamError(ValueError):
    """A --param that cannot be read or applied; the message names it."""


@dataclass(frozen=True)
class ParamSetting:
    """One --param: the variant, the impl (None: every impl of the variant), name and text."""

    text: str
    variant: str
    impl: str | None
    name: str
    value: str

    @property
    def target(self) -> str:
        return self.variant if self.impl is None else f"{self.variant}:{self.impl}"


def parse_param(text: str) -> ParamSetting:
    """The parts of ``text``; ParamError when it is not TARGET.NAME=VALUE."""
    left, equals, value = str(text).partition("=")
    target, dot, name = left.strip().rpartition(".")
    variant, _, impl = target.partition(":")
    if not equals or not dot or not variant or not name.isidentifier() or (":" in target and not impl):
        raise ParamError(f"param: {text!r} is not {FORM}")
    return ParamSetting(str(text), variant.strip(), impl.strip() or None, name, value.strip())


def convert(setting: ParamSetting, default: Any) -> Any:
    """The value of ``setting`` typed as ``default`` (a parameter derived from the input,
    default None, takes a number)."""
    text = setting.value
    try:
        if isinstance(default, bool):
            return {"true": True, "false": False}[text.lower()]
        if isinstance(default, int):
            return int(text)
        if isinstance(default, float):
            return float(text)
        if isinstance(default, str):
            return text
        return int(text) if text.lstrip("+-").isdigit() else float(text)
    except (KeyError, ValueError):
        kind = {bool: "true or false", int: "a whole number", float: "a number"}
        expected = kind.get(type(default), "a number")
        raise ParamError(f"--param {setting.text}: {setting.name} takes {expected}, not {text!r}") from None


def format_params(values: dict[str, Any]) -> str:
    """``k=v;k=v`` in name order (results.csv's params column)."""
    return ";".join(f"{name}={values[name]}" for name in sorted(values))
