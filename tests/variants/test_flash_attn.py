"""softmax's ``fa2``, ``fa3`` and ``fa4``: FlashAttention 2, 3 and 4 mapped from their documented APIs (CPU;
each library stood in by SDPA behind its documented signature: (B, S, H, D) tensors, k and v
with fewer heads, ``softmax_scale``, ``causal``; a pack as (T, H, D) with cu_seqlens).

Each call is bound to the installed function's signature where the library is installed (read
from its source, since both need a GPU to import), so a renamed argument fails on CPU.
"""

from __future__ import annotations

import itertools
from typing import Any

import pytest
import torch
import torch.nn.functional as F
from source_signature import installed_file, installed_module_file, source_signature

import linbench
from linbench.check.correctness import check_impl
from linbench.check.packed import check_packed
from linbench.shape import Shape
from linbench.variants import backends
from linbench.variants.softmax import flash_attn

# The file each library defines its functions in: inside the flash_attn package, or (FlashAttention
# 3's Hopper build) the top-level flash_attn_interface module.
SOURCES = {"fa2": "flash_attn_interface.py", "fa4": "cute/interface.py"}


def _source(impl: str) -> Any:
    return (
        installed_module_file("flash_attn_interface") if impl == "fa3" else installed_file("flash_attn", SOURCES[impl])
    )


class StandIn:
    """SDPA behind a FlashAttention generation's documented functions; each call's arguments kept."""

    def __init__(self, returns_lse: bool) -> None:
        self.returns_lse, self.calls = returns_lse, []

    def _result(self, out: torch.Tensor) -> Any:
        return (out, None) if self.returns_lse else out

    def flash_attn_func(self, q: Any, k: Any, v: Any, softmax_scale: Any = None, causal: bool = False) -> Any:
        self.calls.append(
            ("flash_attn_func", {"q": q, "k": k, "v": v, "softmax_scale": softmax_scale, "causal": causal})
        )
        return self._result(_sdpa(q, k, v, causal))

    def flash_attn_varlen_func(self, q: Any, k: Any, v: Any, **kwargs: Any) -> Any:
        self.calls.append(("flash_attn_varlen_func", {"q": q, "k": k, "v": v, **kwargs}))
        cu = kwargs["cu_seqlens_q"].tolist()
        outs = [_sdpa(*(t[None, a:b] for t in (q, k, v)), kwargs["causal"]) for a, b in itertools.pairwise(cu)]
        return self._result(torch.cat(outs, dim=1)[0])


def _sdpa(q: torch.Tensor, k: torch.Tensor, v: torch.Tensor, causal: bool) -> torch.Tensor:
    """Softmax attention on (B, S, H, D) tensors, k and v with as many heads as q or fewer."""
    grouped = k.shape[2] != q.shape[2]
    out = F.scaled_dot_product_attention(*(t.transpose(1, 2) for t in (q, k, v)), is_causal=causal, enable_gqa=grouped)
    return out.transpose(1, 2)


@pytest.fixture(params=flash_attn.LIBRARIES, ids=lambda library: library.impl)
def library(request: pytest.FixtureRequest, monkeypatch: pytest.MonkeyPatch) -> tuple[flash_attn.Library, StandIn]:
    chosen: flash_attn.Library = request.param
    fake = StandIn(chosen.returns_lse)
    monkeypatch.setattr(flash_attn, "kernel", lambda library, name: getattr(fake, name))
    monkeypatch.setattr(flash_attn, "unavailable", lambda library, device: None)
    return chosen, fake


def test_the_mapping_passes_the_gate_in_bf16_with_gqa_and_on_a_pack(
    library: tuple[flash_attn.Library, StandIn],
) -> None:
    chosen, fake = library
    softmax = linbench.get_variant("softmax")
    for shape in (Shape(1, 2, 24, 16, 16), Shape(2, 4, 20, 16, 16, kv_heads=2)):
        case = check_impl(softmax, chosen.impl, shape, causal=True, dtype=torch.bfloat16)
        assert case.ok, case.describe()
    assert backends.take_noted() == f"{chosen.distribution} flash_attn_func"
    case = check_packed(softmax, chosen.impl, (7, 13), 2, 16, 16, packing="packed", causal=True, dtype=torch.bfloat16)
    assert case.ok, case.describe()
    assert fake.calls[-1][0] == "flash_attn_varlen_func"
    assert backends.take_noted() == f"{chosen.distribution} flash_attn_varlen_func"


def test_each_call_binds_to_the_installed_library(library: tuple[flash_attn.Library, StandIn]) -> None:
    chosen, fake = library
    path = _source(chosen.impl)
    if path is None:
        pytest.skip(f"{chosen.distribution} is not installed (pip install {chosen.distribution})")
    q = torch.randn(1, 2, 8, 16, dtype=torch.bfloat16)
    linbench.attention(q, q, q, variant="softmax", impl=chosen.impl)
    check_packed(
        linbench.get_variant("softmax"),
        chosen.impl,
        (3, 5),
        2,
        16,
        16,
        packing="packed",
        causal=True,
        dtype=torch.bfloat16,
    )
    for name, kwargs in fake.calls:
        source_signature(path, name).bind(**kwargs)


@pytest.mark.parametrize("chosen", flash_attn.LIBRARIES, ids=lambda library: library.impl)
def test_each_says_why_it_cannot_run(chosen: flash_attn.Library) -> None:
    impl = linbench.get_variant("softmax").impl(chosen.impl)
    reason = impl.unavailable_reason(torch.device("cpu")) or ""
    assert "not installed" in reason or "CUDA kernel" in reason
    assert "fp16 and bf16" in (impl.unsupported_reason(64, 64, "fp32") or "")
    assert "Dk = Dv" in (impl.unsupported_reason(64, 32, "bf16") or "")
    assert impl.unsupported_reason(128, 128, "bf16") is None
