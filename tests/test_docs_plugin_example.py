"""The plugin examples of docs/plugins.md are working plugins, not sketches (CPU)."""

from __future__ import annotations

import re
from pathlib import Path

import pytest
import torch

from linbench.check.correctness import Shape, check_decoder, check_impl
from linbench.variants.plugins import load_plugin_file, unload_plugin_file
from linbench.variants.registry import get_variant

PLUGINS_DOC = Path(__file__).parents[1] / "docs" / "plugins.md"


def _example(name: str, tmp_path: Path) -> Path:
    """The doc's ```python block that begins ``# NAME``, as a file."""
    match = re.search(rf"```python\n(# {re.escape(name)}.*?)```", PLUGINS_DOC.read_text(), re.S)
    assert match, f"docs/plugins.md's {name} example is missing"
    plugin = tmp_path / name
    plugin.write_text(match.group(1))
    return plugin


def test_the_documented_plugin_registers_a_variant_that_passes_its_check(tmp_path: Path) -> None:
    plugin = _example("my_attention.py", tmp_path)
    assert len(plugin.read_text().strip().splitlines()) <= 32
    try:
        assert load_plugin_file(plugin) == ["relu"]
        for causal in (True, False):
            result = check_impl(get_variant("relu"), "fused", Shape(1, 2, 65, 16, 16), causal=causal)
            assert result.ok, result.describe()
    finally:
        unload_plugin_file(plugin)


def test_the_documented_causal_only_variant_checks_decodes_and_counts_linear_flops(tmp_path: Path) -> None:
    plugin = _example("decay.py", tmp_path)
    try:
        assert load_plugin_file(plugin) == ["decay"]
        decay = get_variant("decay")
        assert decay.masking_reason(False) == "decay is causal only"
        for impl, shape, dtype in (
            ("recurrent", Shape(1, 2, 1, 8, 8), torch.float32),
            ("recurrent", Shape(2, 3, 65, 16, 24), torch.float32),
            ("quadratic", Shape(2, 3, 100, 16, 24), torch.bfloat16),  # its weights must not be rounded to bf16
        ):
            result = check_impl(decay, impl, shape, causal=True, dtype=dtype)
            assert result.ok, result.describe()
        decoded = check_decoder(decay, "recurrent", Shape(1, 2, 40, 8, 8), steps=4, params={"gamma": 0.8})
        assert decoded.ok, decoded.describe()
        recurrent = decay.decoder("recurrent")
        assert (recurrent.state_memory, recurrent.state_exponent, recurrent.step_exponent) == ("O(d²)", 0, 0)
        assert decay.flops(1, 1, 2048, 64, 64, True, "fwd") == 2 * decay.flops(1, 1, 1024, 64, 64, True, "fwd")
        assert decay.impl("recurrent").time_exponent == 1 and decay.impl("quadratic").time_exponent == 2
    finally:
        unload_plugin_file(plugin)


def test_the_documented_flop_formula_is_the_one_the_example_declares() -> None:
    text = PLUGINS_DOC.read_text()
    formulas = re.findall(r"def decay_flops\(.*?return [^\n]*", text, re.S)
    assert len(formulas) == 2 and formulas[0] == formulas[1]
    assert "def decay_flops(batch, heads, seq, dim_k, dim_v, causal, mode):" in formulas[0]


@pytest.mark.parametrize("word", ["ImplUnavailableError", "masking", "time_exponent", "state_exponent", "Param("])
def test_the_plugin_doc_describes(word: str) -> None:
    assert word in PLUGINS_DOC.read_text()


def test_the_documented_gated_variant_checks_its_gate_decodes_and_refuses_a_bad_one(tmp_path: Path) -> None:
    """CPU. gate.py's impls match in both regimes, gradients of g included; its decoder cuts g per
    token; a positive gate and one of the wrong shape are one-line ValueErrors."""
    import linbench

    plugin = _example("gate.py", tmp_path)
    try:
        assert load_plugin_file(plugin) == ["gate"]
        gate = get_variant("gate")
        assert [extra.name for extra in gate.extra_inputs] == ["g"]
        for regime in ("weak", "strong"):
            for shape in (Shape(1, 2, 1, 8, 8), Shape(2, 3, 65, 16, 24)):
                result = check_impl(gate, "recurrent", shape, causal=True, params={"gate_regime": regime})
                assert result.ok, result.describe()
                assert "grad g" in {comparison.name for comparison in result.comparisons}
        decoded = check_decoder(gate, "recurrent", Shape(1, 2, 40, 8, 8), steps=4)
        assert decoded.ok, decoded.describe()
        q = torch.randn(1, 2, 6, 4)
        with pytest.raises(ValueError, match=r"gate: g must be ≤ 0 \(a log-gate\)"):
            linbench.attention(q, q, q, variant="gate", g=torch.ones(1, 2, 6))
        with pytest.raises(ValueError, match=r"g must have shape \(B, H, S\) = \(1, 2, 6\); got \(1, 2, 6, 4\)"):
            linbench.attention(q, q, q, variant="gate", g=torch.zeros(1, 2, 6, 4))
    finally:
        unload_plugin_file(plugin)


def test_a_plugin_can_declare_the_built_in_gate(tmp_path: Path) -> None:
    """CPU. The documented import runs, and gate.py with the built-in HEAD_GATE in place of its
    own G registers and passes its check, gradients of g included."""
    snippet = _example("builtin_gates.py", tmp_path)
    exec(compile(snippet.read_text(), str(PLUGINS_DOC), "exec"), {})  # the documented lines themselves
    plugin = _example("gate.py", tmp_path)
    text = plugin.read_text().replace("extra_inputs=(G,)", "extra_inputs=(HEAD_GATE,)")
    plugin.write_text("from linbench import HEAD_GATE\n" + text)
    try:
        assert load_plugin_file(plugin) == ["gate"]
        gate = get_variant("gate")
        assert gate.extra_inputs == (get_variant("simple-gla").extra_inputs[0],)
        result = check_impl(gate, "recurrent", Shape(1, 2, 33, 8, 8), causal=True)
        assert result.ok and "grad g" in {c.name for c in result.comparisons}, result.describe()
    finally:
        unload_plugin_file(plugin)


def test_every_python_block_is_an_example_or_runs_beside_the_decay_example(tmp_path: Path) -> None:
    """A block that is not a whole plugin (a piece the text explains) runs in the decay example's
    namespace, where its names (torch, Decoder, stream) are defined: no block is a sketch."""
    import runpy

    blocks = re.findall(r"```python\n(.*?)```", PLUGINS_DOC.read_text(), re.S)
    pieces = [block for block in blocks if not re.match(r"# \S+\.py", block)]
    assert pieces, "docs/plugins.md has no piece to run"
    plugin = _example("decay.py", tmp_path)
    try:
        namespace = runpy.run_path(str(plugin))
        for piece in pieces:
            exec(compile(piece, "docs/plugins.md", "exec"), dict(namespace))
    finally:
        unload_plugin_file(plugin)
