"""``linbench list`` shows every variant and impl, its costs, and whether it runs here."""

from __future__ import annotations

from collections.abc import Iterator

import pytest
import torch
from cli_helpers import PLANTED, Invoke, assert_usage_error

from linbench.variants.registry import (
    Decoder,
    Impl,
    Variant,
    get_variant,
    list_variants,
    register_variant,
    unregister_variant,
)


def test_list_shows_every_variant_and_impl(invoke: Invoke) -> None:
    result = invoke("list", "--device", "cpu")
    assert result.exit_code == 0, result.output
    assert "runs here" in result.stdout
    for name in list_variants():
        variant = get_variant(name)
        assert name in result.stdout
        assert variant.summary in result.stdout
        assert f"{variant.reference} (ref)" in result.stdout
        for impl in variant.impls:
            assert impl in result.stdout


def test_list_shows_params_with_defaults(invoke: Invoke) -> None:
    result = invoke("list", "--device", "cpu")
    for name in list_variants():
        variant = get_variant(name)
        params = [*variant.param_specs, *(p for impl in variant.impls.values() for p in impl.params)]
        for param in params:
            shown = "<from input>" if param.default is None else param.default
            assert f"{param.name}={shown}" in result.stdout


def test_list_shows_each_variants_extra_inputs(invoke: Invoke) -> None:
    """CPU. One row per gate or β, with its shape and dtype; the gated variants say they are causal only."""
    result = invoke("list", "--device", "cpu")
    cells = [[cell.strip() for cell in line.split("│")[1:-1]] for line in result.stdout.splitlines()]
    extra = {(row[0], row[1]): row[2:4] for row in cells if len(row) == 6 and row[1] in ("g", "beta")}
    assert extra[("gla", "g")] == ["(B, H, S, Dk)", "fp32 for 16-bit q, else q's"]
    assert extra[("gated-deltanet", "beta")] == ["(B, H, S)", "q's"]
    assert extra[("kda", "g")] == ["(B, H, S, Dk)", "fp32 for 16-bit q, else q's"]
    assert {name for name, _ in extra} == {"simple-gla", "gla", "deltanet", "gated-deltanet", "kda", "gdn2"}
    causal_only = {row[0] for row in cells if "causal only" in row}
    assert causal_only >= {"retention", "lightning", "simple-gla", "gla", "deltanet", "gated-deltanet", "kda"}


def test_list_says_why_an_impl_cannot_run(invoke: Invoke, planted: str) -> None:
    result = invoke("list", "--device", "cpu")
    line = next(line for line in result.stdout.splitlines() if PLANTED in line and "away" in line)
    assert "no" in line and "needs a planted chip" in line


@pytest.mark.parametrize("device", ["bogus", "cuda:x", "meta"])
def test_list_rejects_unknown_devices(invoke: Invoke, device: str) -> None:
    assert_usage_error(invoke("list", "--device", device), "device")


@pytest.mark.skipif(torch.cuda.is_available(), reason="CUDA is available here")
def test_list_on_cuda_without_cuda_is_a_usage_error(invoke: Invoke) -> None:
    assert_usage_error(invoke("list", "--device", "cuda"), "CUDA is not available")


def test_list_shows_the_decoders_decode_takes(invoke: Invoke) -> None:
    result = invoke("list", "--device", "cpu")
    assert "linbench decode --variant VARIANT:DECODER" in result.stdout
    for name in list_variants():
        for decoder in get_variant(name).decoders.values():
            assert decoder.name in result.stdout and decoder.state_memory in result.stdout
    assert "kvcache" in result.stdout and "recompute" in result.stdout


def _stream(q: torch.Tensor, k: torch.Tensor, v: torch.Tensor, *, state: object) -> tuple[torch.Tensor, object]:
    return v, state


@pytest.fixture
def causal_plugin() -> Iterator[str]:
    """A causal-only variant with a recurrent decoder whose costs are declared, and one whose are not."""
    impl = Impl("ref", lambda q, k, v, *, causal: v, "", "O(s²d)", "O(s²)")
    decoders = (
        Decoder.from_stream("recurrent", "its retention state", _stream, "O(d²)", "O(d²)"),
        Decoder.from_stream("undeclared", "costs not said", _stream, "-", "-"),
    )
    name = "test-list-causal"
    variant = Variant(
        name, "decay", (impl,), "ref", (), lambda *a: 0.0, "O(s²d)", "O(s²)", decoder_list=decoders, masking=("causal",)
    )
    register_variant(variant)
    yield name
    unregister_variant(name)


def test_list_shows_the_masking_each_variant_computes(invoke: Invoke, causal_plugin: str) -> None:
    result = invoke("list", "--device", "cpu")
    assert result.exit_code == 0, result.output
    line = next(line for line in result.stdout.splitlines() if causal_plugin in line and "decay" in line)
    assert "causal only" in line
    softmax = next(line for line in result.stdout.splitlines() if line.startswith("│ softmax ") and "softmax(" in line)
    assert "causal, bidirectional" in softmax


def test_list_shows_a_plugin_decoder_s_declared_costs(invoke: Invoke, causal_plugin: str) -> None:
    result = invoke("list", "--device", "cpu")
    lines = [line for line in result.stdout.splitlines() if causal_plugin in line]
    recurrent = next(line for line in lines if "recurrent" in line)
    assert recurrent.count("O(d²)") == 2
    undeclared = next(line for line in lines if "undeclared" in line)
    assert "not declared" in undeclared  # not a bare "-"


def test_list_says_which_impls_take_more_value_heads(invoke: Invoke) -> None:
    """CPU. The "v heads" column: fla's gated delta rule and kda kernels natively, the gated
    PyTorch forms by repeating q and k, "-" for a variant without value heads (softmax)."""
    result = invoke("list", "--device", "cpu")
    rows = [[cell.strip() for cell in line.split("│")[1:-1]] for line in result.stdout.splitlines()]
    impls = [row for row in rows if len(row) == 8]
    variant, v_heads = "", {}
    for row in impls:
        variant = row[0] or variant
        v_heads[(variant, row[1].removesuffix(" (ref)"))] = row[6]
    assert v_heads[("kda", "fla")] == v_heads[("gated-deltanet", "fla-recurrent")] == "native"
    assert v_heads[("kda", "chunked")] == v_heads[("simple-gla", "fla")] == "expanded"
    assert v_heads[("softmax", "sdpa")] == "-"
