"""The inputs a worker times an impl on: fla's (B, S, H, D) layout is made untimed."""

from __future__ import annotations

import sys
import types

import pytest
import torch

from linbench.runner.workload import Workload
from linbench.shape import Shape
from linbench.sweep.points import Point
from linbench.variants.feature_forms import fla
from linbench.variants.libraries import wrapper
from linbench.variants.libraries.contract import Contract

CPU = torch.device("cpu")


def _point(impl: str, mode: str) -> Point:
    return Point("cosine", impl, mode, True, "fp32", "cpu", Shape(1, 3, 40, 8, 8))


@pytest.mark.parametrize("mode", ["fwd", "fwdbwd"])
def test_a_seq_major_impl_gets_views_of_seq_major_inputs_and_copies_nothing(
    monkeypatch: pytest.MonkeyPatch, mode: str
) -> None:
    seen: list[bool] = []

    def stand_in(q: torch.Tensor, k: torch.Tensor, v: torch.Tensor, scale: float, normalize: bool) -> tuple:
        seen.append(all(t.is_contiguous() for t in (q, k, v)))  # fla would copy anything else
        qh, kh, vh = (t.transpose(1, 2) for t in (q, k, v))
        return ((scale * qh @ kh.transpose(-1, -2)).tril() @ vh).transpose(1, 2), None

    monkeypatch.setattr(fla, "chunk_linear_attn", lambda: stand_in)
    monkeypatch.setattr(fla, "fla_unavailable", lambda device: None)
    work = Workload(_point("fla", mode), CPU)
    assert work.q.shape == (1, 3, 40, 8) and work.q.transpose(1, 2).is_contiguous()
    for _ in range(2):  # the second repetition gets freshly placed inputs: still seq-major
        work.before()
        work.run()
    assert work.q.transpose(1, 2).is_contiguous()
    # Elementwise ops (cosine's L2 norms) keep their input's strides: fla is given all three as is.
    assert seen and all(seen)


def test_other_impls_keep_linbench_layout() -> None:
    work = Workload(_point("chunked", "fwd"), CPU)
    assert work.q.is_contiguous() and work.v.is_contiguous()


@pytest.mark.parametrize("mode", ["fwd", "bwd"])
def test_placed_inputs_keep_their_values_strides_and_gradients_extras_included(mode: str) -> None:
    point = Point("gated-deltanet", "recurrent", mode, True, "fp32", "cpu", Shape(1, 2, 48, 8, 8))
    work = Workload(point, CPU)
    made = {"q": work.q.detach().clone(), "v": work.v.detach().clone()} | {
        name: t.detach().clone() for name, t in work.extras.items()
    }
    grads = {name: t.requires_grad for name, t in work.extras.items()}
    for _ in range(3):
        work._layout_s = 0.0  # every repetition due for a new placement, whatever the clock says
        work.before()
        work.run()
    assert work._arena is not None
    arena = (work._arena.data_ptr(), work._arena.data_ptr() + work._arena.numel())
    for name, tensor in [("q", work.q), ("v", work.v), *work.extras.items()]:
        assert arena[0] <= tensor.data_ptr() < arena[1], name  # placed in the arena, not fresh
        assert torch.equal(tensor.detach(), made[name]) and tensor.stride() == made[name].stride(), name
    assert work.q.requires_grad == (mode == "bwd")
    assert {name: t.requires_grad for name, t in work.extras.items()} == grads


@pytest.mark.parametrize("mode", ["fwd", "fwdbwd"])
def test_a_grouped_point_draws_k_and_v_with_its_key_value_heads(mode: str) -> None:
    point = Point("cosine", "chunked", mode, True, "fp32", "cpu", Shape(1, 6, 40, 8, 4, kv_heads=2), chunk=16)
    work = Workload(point, CPU, params={"chunk_size": 16})
    assert (work.q.shape, work.k.shape, work.v.shape) == ((1, 6, 40, 8), (1, 2, 40, 8), (1, 2, 40, 4))
    work.before()
    work.run()


def test_a_value_grouped_point_draws_v_the_gates_and_beta_per_value_head() -> None:
    """GVA: q and k with the point's heads, v, the output's cotangent, g and β with its value heads."""
    point = Point("gated-deltanet", "chunked", "fwdbwd", True, "fp32", "cpu", Shape(1, 2, 40, 8, 4, v_heads=6))
    work = Workload(point, CPU, params={"chunk_size": 16})
    assert (work.q.shape, work.k.shape, work.v.shape) == ((1, 2, 40, 8), (1, 2, 40, 8), (1, 6, 40, 4))
    assert work.extras["g"].shape == work.extras["beta"].shape == (1, 6, 40)
    work.before()
    work.run()


def test_what_a_library_impl_holds_is_made_once_when_the_inputs_are_drawn(monkeypatch: pytest.MonkeyPatch) -> None:
    """kda:flash-kda's gate and β logits and its constants (Impl.hold) are made with the inputs,
    untimed; the timed calls get them and make nothing (FlashKDA stood in; CPU)."""
    made: list[int] = []
    fwd_calls: list[torch.Tensor] = []

    def fwd(q: torch.Tensor, k: torch.Tensor, v: torch.Tensor, g: torch.Tensor, beta: torch.Tensor, *a, **kw) -> None:
        fwd_calls.append(g)

    monkeypatch.setitem(sys.modules, "flash_kda", types.SimpleNamespace(fwd=fwd))
    monkeypatch.setattr(Contract, "unavailable", lambda self, device: None)
    real_convert = wrapper.convert_gate
    monkeypatch.setattr(wrapper, "convert_gate", lambda *args: made.append(1) or real_convert(*args))
    point = Point("kda", "flash-kda", "fwd", True, "bf16", "cpu", Shape(1, 1, 16, 128, 128, v_heads=2))
    work = Workload(point, CPU)
    assert work.held is not None and made == [1]
    for _ in range(3):
        work.before()
        work.run()
    assert made == [1] and len(fwd_calls) == 3 and all(g is work.held["g"] for g in fwd_calls)
