"""The fla impls' adapters (layout, scale, normaliser) against a stand-in for fla's kernel.

fla's chunk_linear_attn is a Triton kernel; here a pure-PyTorch function with its signature
and documented maths takes its place, so the adapters and the correctness gate's verdict on
them are tested without a GPU. On a machine without fla, the impls say why they cannot run.
"""

from __future__ import annotations

from typing import Any

import pytest
import torch

import linbench
from linbench.check.correctness import check_impl
from linbench.shape import Shape
from linbench.variants.feature_forms import fla
from linbench.variants.registry import Variant

FLA_EPS = 1e-10


class StandIn:
    """fla's chunk_linear_attn in plain PyTorch, on (B, S, H, D): records what it was given."""

    def __init__(self) -> None:
        self.calls: list[dict[str, Any]] = []

    def __call__(
        self, q: torch.Tensor, k: torch.Tensor, v: torch.Tensor, scale: float | None = None, normalize: bool = True
    ) -> tuple[torch.Tensor, None]:
        self.calls.append({"shape": tuple(q.shape), "scale": scale, "normalize": normalize})
        scale = q.shape[-1] ** -0.5 if scale is None else scale
        qh, kh, vh = (t.transpose(1, 2) for t in (q, k, v))  # (B, H, S, D) for the sums
        scores = ((qh * scale) @ kh.transpose(-1, -2)).tril()
        out = scores @ vh
        if normalize:
            out = out / (scores.sum(-1, keepdim=True) + FLA_EPS)
        return out.transpose(1, 2), None


@pytest.fixture
def stand_in(monkeypatch: pytest.MonkeyPatch) -> StandIn:
    """fla's kernel replaced by the stand-in, and the fla impls declared runnable (on CPU too)."""
    fake = StandIn()
    monkeypatch.setattr(fla, "chunk_linear_attn", lambda: fake)
    monkeypatch.setattr(fla, "fla_unavailable", lambda device: None)
    return fake


def _runnable(name: str) -> Variant:
    return linbench.get_variant(name)


FAITHFUL_CASES = [("cosine", torch.float32), ("cosine", torch.float64), ("linear", torch.float32)]


@pytest.mark.parametrize(("name", "dtype"), FAITHFUL_CASES)
def test_the_gate_passes_the_adapters_on_a_faithful_stand_in(stand_in: StandIn, name: str, dtype: torch.dtype) -> None:
    case = check_impl(_runnable(name), "fla", Shape(2, 3, 70, 16, 24), causal=True, dtype=dtype, gradients=True)
    assert case.ok, case.describe()
    assert stand_in.calls


def test_fp64_tells_fla_normaliser_eps_from_the_variants(stand_in: StandIn) -> None:
    """fla adds 1e-10 to linear's normaliser where the variant adds 1e-6: below fp32's rounding,
    above fp64's, which is one reason the fla impls refuse fp64."""
    case = check_impl(_runnable("linear"), "fla", Shape(2, 3, 70, 16, 24), causal=True, dtype=torch.float64)
    assert not case.ok


def test_fla_gets_its_own_layout(stand_in: StandIn) -> None:
    q, k, v = (torch.randn(2, 3, 50, 8) for _ in range(3))
    out = linbench.get_variant("cosine").impl("fla").fn(q, k, v, causal=True, norm_const=0.5, seq_len=None)
    assert stand_in.calls[0]["shape"] == (2, 50, 3, 8)  # (B, S, H, D)
    assert out.shape == (2, 3, 50, 8)


def test_cosine_passes_its_value_scale_as_fla_scale(stand_in: StandIn) -> None:
    q, k, v = (torch.randn(1, 2, 64, 8) for _ in range(3))
    linbench.get_variant("cosine").impl("fla").fn(q, k, v, causal=True, norm_const=0.5, seq_len=None)
    expected = 64 ** -(1 / (1 + torch.exp(torch.tensor(-0.5)).item()))
    assert stand_in.calls[0]["scale"] == pytest.approx(expected)
    assert stand_in.calls[0]["normalize"] is False


def test_cosine_with_a_per_head_m_scales_v_and_its_gradient_reaches_m(stand_in: StandIn) -> None:
    q, k, v = (torch.randn(1, 2, 32, 8) for _ in range(3))
    m = torch.tensor([0.1, 0.9], requires_grad=True)
    out = linbench.get_variant("cosine").impl("fla").fn(q, k, v, causal=True, norm_const=m, seq_len=None)
    (grad,) = torch.autograd.grad(out.sum(), m)
    assert stand_in.calls[0]["scale"] == 1.0
    assert grad.abs().min() > 0


def test_linear_uses_fla_normaliser_at_scale_one(stand_in: StandIn) -> None:
    q, k, v = (torch.randn(1, 2, 32, 8) for _ in range(3))
    linbench.get_variant("linear").impl("fla").fn(q, k, v, causal=True, eps=1e-6)
    assert stand_in.calls[0] == {"shape": (1, 32, 2, 8), "scale": 1.0, "normalize": True}


def test_linear_refuses_an_eps_fla_cannot_apply(stand_in: StandIn) -> None:
    q, k, v = (torch.randn(1, 2, 32, 8) for _ in range(3))
    with pytest.raises(ValueError, match="eps"):
        linbench.get_variant("linear").impl("fla").fn(q, k, v, causal=True, eps=0.1)


def test_a_wrong_scale_fails_the_gate(monkeypatch: pytest.MonkeyPatch) -> None:
    """The gate catches an adapter that gets fla's scale wrong (here: fla's default 1/√D)."""
    fake = StandIn()
    fla_default_scale = lambda q, k, v, scale, normalize: fake(q, k, v, None, normalize)  # noqa: E731
    monkeypatch.setattr(fla, "chunk_linear_attn", lambda: fla_default_scale)
    monkeypatch.setattr(fla, "fla_unavailable", lambda device: None)
    case = check_impl(_runnable("cosine"), "fla", Shape(1, 2, 40, 16, 16), causal=True, dtype=torch.float32)
    assert not case.ok


@pytest.mark.parametrize("name", ["cosine", "linear"])
def test_bidirectional_is_unavailable(stand_in: StandIn, name: str) -> None:
    case = check_impl(_runnable(name), "fla", Shape(1, 2, 16, 8, 8), causal=False, dtype=torch.float32)
    assert case.unavailable and "causal only" in case.unavailable


def test_without_fla_the_impls_say_why(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(fla, "fla_version", lambda: None)
    reason = linbench.get_variant("cosine").impl("fla").unavailable_reason(torch.device("cpu"))
    assert reason is not None and "fla-core is not installed" in reason and "[fla]" in reason


def test_on_cpu_an_installed_fla_still_needs_a_gpu(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(fla, "fla_version", lambda: "0.6.0")
    reason = fla.fla_unavailable(torch.device("cpu"))
    assert reason is not None and "CUDA GPU" in reason


def test_an_fla_that_cannot_import_einops_says_so_in_one_line_for_every_fla_impl(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """fla-core installed without einops (which fla's op packages import): every impl on
    fla-core is unavailable with the import's own one-line message, on a GPU with Triton."""

    def no_einops(module: str) -> None:
        raise ModuleNotFoundError("No module named 'einops'", name="einops")

    monkeypatch.setattr(fla, "fla_version", lambda: "0.6.0")
    monkeypatch.setattr(fla, "import_fla", no_einops)
    monkeypatch.setattr("torch.utils._triton.has_triton", lambda: True)
    impls = [linbench.get_variant(v).impl(i) for v in linbench.list_variants() for i in linbench.get_variant(v).impls]
    on_fla = [impl for impl in impls if impl.library == fla.DISTRIBUTION]
    reasons = [impl.unavailable_reason(torch.device("cuda")) for impl in on_fla]
    assert len(on_fla) >= 18, on_fla
    assert set(reasons) == {"fla cannot be imported: No module named 'einops'"}, reasons


def test_an_untested_fla_version_is_refused(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(fla, "fla_version", lambda: "0.7.1")
    reason = fla.fla_unavailable(torch.device("cuda"))
    assert reason is not None and "0.6.x" in reason


def test_fp64_is_refused_before_a_run() -> None:
    assert linbench.get_variant("linear").impl("fla").unsupported_reason(64, 64, "fp64")
    assert linbench.get_variant("linear").impl("fla").unsupported_reason(64, 64, "bf16") is None


@pytest.mark.cuda
def test_real_fla_matches_the_reference_on_cuda() -> None:
    if fla.fla_unavailable(torch.device("cuda")) is not None:
        pytest.skip(f"fla cannot run: {fla.fla_unavailable(torch.device('cuda'))}")
    for name in ("cosine", "linear"):
        shape = Shape(2, 4, 512, 64, 64)
        case = check_impl(linbench.get_variant(name), "fla", shape, causal=True, dtype=torch.bfloat16, device="cuda")
        assert case.ok, case.describe()
