"""Model presets: a documented table of attention shapes, each row sourced (CPU, no run)."""

from __future__ import annotations

import re

import pytest

from linbench.sweep.presets import PRESETS, get_preset
from linbench.sweep.request import SweepRequest
from linbench.sweep.spec import SpecError, build_spec


@pytest.mark.parametrize("name", list(PRESETS))
def test_every_preset_is_a_grouped_shape_with_its_source(name: str) -> None:
    preset = PRESETS[name]
    assert preset.heads % preset.kv_heads == 0 and preset.kv_heads < preset.heads
    assert preset.dim in (64, 128, 256)
    assert "20" in preset.source and "(" in preset.source  # a publication and its year


@pytest.mark.parametrize("command", ["run", "decode"])
def test_a_preset_fills_heads_kv_heads_dim_and_the_length_axis(command: str) -> None:
    (block,) = build_spec(SweepRequest(command=command, preset="qwen2-7b")).blocks
    assert (block.heads, block.kv_heads, block.dim) == ((28,), (4,), (128,))
    assert block.seq == (1024, 2048, 4096, 8192, 16384, 32768)


def test_the_command_line_and_a_suite_override_a_preset(tmp_path) -> None:
    (block,) = build_spec(SweepRequest(preset="gemma2-9b", seq="256", dim="64")).blocks
    assert (block.seq, block.heads, block.kv_heads, block.dim) == ((256,), (16,), (8,), (64,))
    suite = tmp_path / "s.toml"
    suite.write_text('preset = "falcon-7b"\nheads = 2\nkv_heads = 1\n')
    (block,) = build_spec(SweepRequest(suite=suite)).blocks
    assert (block.heads, block.kv_heads, block.dim) == ((2,), (1,), (64,))


def test_an_unknown_preset_lists_the_presets() -> None:
    with pytest.raises(ValueError, match="unknown preset 'x'; presets: llama3-8b, "):
        get_preset("x")
    with pytest.raises(SpecError, match="preset: unknown preset 'x'"):
        build_spec(SweepRequest(preset="x"))


@pytest.mark.parametrize(
    ("given", "meant"),
    [
        ("qwen3.5", "did you mean qwen3.5-397b or qwen3.5-35b?"),
        ("kimi-linear", "did you mean kimi-linear-48b?"),
        ("llama3-7b", "did you mean llama3-70b or llama3-8b?"),  # the closest first
    ],
)
def test_an_unknown_preset_names_the_presets_it_may_mean(given: str, meant: str) -> None:
    with pytest.raises(SpecError, match=f"unknown preset '{re.escape(given)}'; {re.escape(meant)} presets: "):
        build_spec(SweepRequest(preset=given))
