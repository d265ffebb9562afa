"""The library impls whose Python layer cannot be imported on a CPU (FlashKDA and cuLA: source
builds with CUDA extensions; FlashAttention 2/3/4: CUDA extensions) or whose call is a plain
function (FlashInfer's single prefill), each through a stand-in that encodes the library's
contract (kda_library_stand_ins.py quotes FlashKDA's and cuLA's lines; the FlashAttention stand-ins
are SDPA behind their documented signatures), checked as ``linbench check`` checks them at
batch 2 with more value heads (softmax: fewer key/value heads) than q/k heads.
"""

from __future__ import annotations

import itertools
import sys
import types
from typing import Any

import pytest
import torch
import torch.nn.functional as F
from kda_library_stand_ins import CuLA, FlashKDA
from library_cases import BF16_TOLERANCE, case, check_at_batch_2_with_value_heads, reference, rel_error, run_packed

import linbench
from linbench.errors import ImplUnavailableError
from linbench.variants import backends
from linbench.variants.libraries import wrapper
from linbench.variants.varlen import Segments


def _sdpa(q: torch.Tensor, k: torch.Tensor, v: torch.Tensor, causal: bool) -> torch.Tensor:
    """Softmax attention on (B, S, H, D), k and v with as many heads as q or fewer."""
    out = F.scaled_dot_product_attention(
        *(t.transpose(1, 2).float() for t in (q, k, v)), is_causal=causal, enable_gqa=True
    )
    return out.transpose(1, 2).to(q.dtype)


class FlashAttention:
    """SDPA behind flash_attn_func / flash_attn_varlen_func (module docstring)."""

    def __init__(self, returns_lse: bool) -> None:
        self.returns_lse, self.calls = returns_lse, []  # type: ignore[var-annotated]

    def _result(self, out: torch.Tensor) -> Any:
        return (out, None) if self.returns_lse else out

    def flash_attn_func(self, q: Any, k: Any, v: Any, softmax_scale: Any = None, causal: bool = False) -> Any:
        self.calls.append("flash_attn_func")
        assert softmax_scale is None and q.dim() == 4
        return self._result(_sdpa(q, k, v, causal))

    def flash_attn_varlen_func(self, q: Any, k: Any, v: Any, **kw: Any) -> Any:
        self.calls.append("flash_attn_varlen_func")
        assert q.dim() == 3 and kw["cu_seqlens_q"].dtype == torch.int32 and kw["max_seqlen_q"] > 0
        bounds = itertools.pairwise([int(x) for x in kw["cu_seqlens_q"]])
        outs = [_sdpa(*(t[None, a:b] for t in (q, k, v)), kw["causal"]) for a, b in bounds]
        return self._result(torch.cat(outs, dim=1)[0])


PREFILL_OUTPUTS: list[torch.Tensor] = []  # what the stand-in returned, newest last


def _single_prefill(q: Any, k: Any, v: Any, causal: bool, kv_layout: str, sm_scale: Any) -> torch.Tensor:
    assert kv_layout == "NHD" and sm_scale is None and q.dim() == 3  # prefill.py:1235-1259
    PREFILL_OUTPUTS.append(_sdpa(q[None], k[None], v[None], causal)[0])
    return PREFILL_OUTPUTS[-1]


@pytest.fixture
def libraries(monkeypatch: pytest.MonkeyPatch) -> dict[str, Any]:
    """FlashKDA, cuLA, FlashAttention 2/3/4 and FlashInfer's prefill as modules of stand-ins."""
    flash_kda, cula = FlashKDA(), CuLA()
    fa = {"fa2": FlashAttention(False), "fa3": FlashAttention(False), "fa4": FlashAttention(True)}
    modules = {
        "flash_kda": types.SimpleNamespace(fwd=flash_kda.fwd),
        **cula.modules(),
        "flash_attn": fa["fa2"],
        "flash_attn_interface": fa["fa3"],
        "flash_attn.cute": fa["fa4"],
        "flashinfer": types.SimpleNamespace(single_prefill_with_kv_cache=_single_prefill),
    }
    for name, module in modules.items():
        monkeypatch.setitem(sys.modules, name, module)
    return {"flash-kda": flash_kda, "cula": cula, **fa}


STOOD_IN = [("kda", "flash-kda"), ("kda", "cula"), ("lightning", "cula")]
STOOD_IN += [("softmax", name) for name in ("fa2", "fa3", "fa4")]


@pytest.mark.parametrize(("variant", "impl"), STOOD_IN)
def test_each_passes_the_check_at_batch_2_with_value_heads(
    libraries: dict[str, Any], monkeypatch: pytest.MonkeyPatch, variant: str, impl: str
) -> None:
    check_at_batch_2_with_value_heads(variant, impl, monkeypatch)
    assert backends.take_noted() is not None


@pytest.mark.parametrize("impl", ("flash-kda", "cula"))
def test_a_pack_in_one_call(libraries: dict[str, Any], impl: str) -> None:
    c, segments = case("kda", batch=1, seq=24), Segments((0, 11, 24))
    assert rel_error(run_packed("kda", impl, c, segments), reference("kda", c, segments)) < BF16_TOLERANCE


def test_cula_runs_its_hopper_prefill_on_sm90_and_refuses_a_gradient_there(
    libraries: dict[str, Any], monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(wrapper, "capability", lambda device: (9, 0))
    c = case("kda")
    with torch.no_grad():
        linbench.get_variant("kda").impl("cula").fn(c.q, c.k, c.v, **c.keywords())
    assert libraries["cula"].calls[-1][0] == "kda_prefill_hopper"
    q = c.q.clone().requires_grad_(True)
    with pytest.raises(ImplUnavailableError, match="forward-only kernel on SM90"):
        linbench.get_variant("kda").impl("cula").fn(q, c.k, c.v, **c.keywords())


@pytest.mark.parametrize("impl", ("flash-kda", "cula"))
def test_a_gate_below_the_floor_is_refused_with_its_value_before_any_call(libraries: dict[str, Any], impl: str) -> None:
    c = case("kda")
    c.extras["g"] = c.extras["g"] - 6.0
    held = linbench.get_variant("kda").impl(impl).hold
    assert held is not None
    with pytest.raises(ImplUnavailableError, match="bounded below at -5"):
        held(c.q, c.k, c.v, segments=None, **c.keywords())
    assert not libraries[impl].calls


def test_flashinfer_s_single_prefill_passes_the_check_at_batch_1_its_output_not_copied(
    libraries: dict[str, Any], monkeypatch: pytest.MonkeyPatch
) -> None:
    """One sequence, head size 128, grouped-query (2 q heads, 1 k/v head): the check's cells
    pass, and the output is the library's own tensor seen through views (no stack, no copy)."""
    from linbench.check.correctness import check_impl
    from linbench.shape import Shape
    from linbench.variants.libraries.contract import Contract

    monkeypatch.setattr(Contract, "unavailable", lambda self, device: None)
    shape = Shape(1, 2, 16, 128, 128, kv_heads=1)
    result = check_impl(
        linbench.get_variant("softmax"), "flashinfer", shape, causal=True, dtype=torch.bfloat16, gradients=False
    )
    assert result.ok, result.describe()
    c = case("softmax", batch=1, heads=2, v_heads=2)
    out = linbench.get_variant("softmax").impl("flashinfer").fn(c.q, c.k, c.v, causal=True)
    assert out.data_ptr() == PREFILL_OUTPUTS[-1].data_ptr()


def test_flashinfer_s_single_prefill_refuses_a_batch_naming_the_batched_prefill(libraries: dict[str, Any]) -> None:
    """Calls in turn are not how FlashInfer runs a batch: a batch of 2 is refused, no call made;
    a pack has no packed form here (it would run padded, as a batch, and be refused so)."""
    c = case("softmax", batch=2, heads=2, v_heads=2)
    before = len(PREFILL_OUTPUTS)
    impl = linbench.get_variant("softmax").impl("flashinfer")
    with pytest.raises(ImplUnavailableError, match=r"a batch of 2: .*BatchPrefillWithRaggedKVCacheWrapper"):
        impl.fn(c.q, c.k, c.v, causal=True)
    assert len(PREFILL_OUTPUTS) == before and impl.packed is None
