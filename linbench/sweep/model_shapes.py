"""The axes of a sweep that model shapes add: key/value heads, value heads, and presets that fill them.

spec.py asks these when it reads a sweep's settings; each refuses a bad value with a
SpecError naming the setting and the values it takes.
"""

from __future__ import annotations

from typing import Any

from linbench.hybrids import LayerShape, get_hybrid
from linbench.sweep.presets import get_preset
from linbench.sweep.settings import LENGTH_AXIS
from linbench.sweep.values import SpecError, parse_sizes, positive_int


def kv_heads_axis(value: Any, heads: tuple[int, ...]) -> tuple[int, ...] | None:
    """The key/value head counts, each dividing every head count; SpecError listing the
    counts that would when one does not."""
    if value is None:
        return None
    kv_heads = parse_sizes("kv_heads", value)
    for count in heads:
        bad = [kv for kv in kv_heads if count % kv]
        if bad:
            valid = ", ".join(str(d) for d in range(1, count + 1) if count % d == 0)
            raise SpecError(f"kv_heads: {bad[0]} does not divide heads {count}; kv_heads that do: {valid}")
    return kv_heads


def v_heads_axis(value: Any, heads: tuple[int, ...], kv_heads: tuple[int, ...] | None) -> tuple[int, ...] | None:
    """The value head counts, each a multiple of every head count (GVA); SpecError when one is
    not, or when key/value heads are set too (the two groupings do not combine)."""
    if value is None:
        return None
    v_heads = parse_sizes("v_heads", value)
    if kv_heads is not None and any(kv != count for kv in kv_heads for count in heads):
        raise SpecError("v_heads: more value heads (GVA) and fewer key/value heads (--kv-heads) do not combine")
    for count in heads:
        bad = [v for v in v_heads if v % count]
        if bad:
            serves = "each q/k head serves v_heads / heads value heads"
            raise SpecError(f"v_heads: {bad[0]} is not a multiple of heads {count} ({serves})")
    return v_heads


def preset_settings(name: Any, command: str, tp: Any = None) -> tuple[dict[str, Any], list[dict[str, Any]]]:
    """The settings preset ``name`` fills (none for None), its head counts as one of ``tp``
    tensor-parallel ranks holds them, and the sweep's blocks a hybrid preset fills (its two
    layer kinds); SpecError listing the presets, or naming a head count ``tp`` does not divide."""
    ranks = None if tp is None else positive_int("tp", tp)
    if name is None:
        if ranks is not None:
            raise SpecError("tp: divides a model's head counts; give it with --preset")
        return {}, []
    hybrid = get_hybrid(str(name))
    try:
        if hybrid is not None:
            hybrid = hybrid if ranks is None else hybrid.sharded(ranks)
            hybrid = hybrid.decoding() if command == "decode" else hybrid  # MLA decodes absorbed
            run_name = str(name) if ranks is None else f"{name}-tp{ranks}"
            return hybrid.settings(LENGTH_AXIS[command]) | {"preset": str(name), "name": run_name}, hybrid.tables()
        preset = get_preset(str(name))
        settings = preset.settings(command) | {"preset": str(name)}
        if ranks is not None:
            layer = LayerShape("softmax", 1, preset.heads, preset.dim, preset.dim, kv_heads=preset.kv_heads)
            shard = layer.sharded(ranks, str(name))
            settings |= {"heads": shard.heads, "kv_heads": shard.kv_heads}
        return settings, []
    except ValueError as exc:
        text = str(exc)
        raise SpecError(text if text.startswith("tp:") else f"preset: {text}") from None


def place_groupings(blocks: list[dict[str, Any]], given: dict[str, Any]) -> tuple[list[dict[str, Any]], dict[str, Any]]:
    """A hybrid preset's ``blocks`` with ``given``'s value heads set on its linear layers' block
    and its key/value heads on its softmax layers' (each grouping belongs to one layer kind:
    GVA to the linear mixer, GQA to softmax, and the two never combine in one block), and
    ``given`` without them; both as they are where there are no blocks."""
    if not blocks:
        return blocks, given
    rest, placed = dict(given), [dict(block) for block in blocks]
    for name, on_softmax in (("v_heads", False), ("kv_heads", True)):
        if name in rest:
            value = rest.pop(name)
            for block in placed:
                if (block.get("layer_variants") == ["softmax"]) == on_softmax:
                    block[name] = value
    return placed, rest
