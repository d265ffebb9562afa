"""kda's ``flashinfer`` and ``flashinfer-recurrent`` and gated-deltanet's ``flashinfer`` through
FlashInfer 0.7.2.post1's own Python layer (CPU, as SM90 and SM100: library_layers.py).

FlashInfer's checks and dispatch run for real; only its kernel launches are stood in: the
recurrent KDA kernel's compiled launch (kda_kernels/recurrent_kda.py ``_get_compiled_kernel``,
``_get_grouped_compiled``), the KDA prefill routes it picks (``_run_*_prefill``), the GDN
prefill pipelines (``chunk_gated_delta_rule_sm90``, run for real up to its launch, and the CP
one) and its q/k norm kernel. Each stand-in records what it received and computes the output
from fla's naive recurrences, which is judged against linbench's fp64 reference.
"""

from __future__ import annotations

import sys
from collections.abc import Iterator
from contextlib import nullcontext
from typing import Any

import pytest
import torch
import torch.nn.functional as F
from library_cases import BF16_TOLERANCE, case, check_at_batch_2_with_value_heads, reference, rel_error, run, run_packed
from library_layers import installed, library_layer, lower_bound_gate, on_gpu, recurrence

import linbench
from linbench.errors import ImplUnavailableError
from linbench.variants import backends
from linbench.variants.varlen import Segments

pytestmark = pytest.mark.skipif(
    not installed("flashinfer-python"),
    reason="flashinfer-python is not installed (pip install --no-deps flashinfer-python==0.7.2.post1; see .ci/run)",
)
SM90, SM100 = (9, 0), (10, 0)
PREFILL_ROUTES = (
    ("flashinfer.kda_prefill", "_run_flash_kda_prefill"),
    ("flashinfer.kda_prefill_cute", "_run_cute_dsl_kda_prefill"),
    ("flashinfer.kda_prefill_cute_small_bh", "_run_kda_prefill_cute_small_bh"),
    ("flashinfer.kda_prefill", "_run_sm120_kda_prefill"),
)


@pytest.fixture(scope="module")
def layer() -> Iterator[dict[str, Any]]:
    """FlashInfer's KDA and GDN modules, imported once with its native dependencies stood in."""
    with library_layer("flashinfer", ("tvm_ffi", "tqdm", "cutlass", "cuda"), ("flashinfer", "flashinfer.cute_dsl")):
        import flashinfer
        import flashinfer.gdn_kernels.qk_l2norm
        import flashinfer.gdn_prefill
        import flashinfer.kda
        import flashinfer.kda_decode

        # What flashinfer/__init__.py exports (its __init__ imports every kernel family: not run).
        flashinfer.recurrent_kda = flashinfer.kda.recurrent_kda  # type: ignore[attr-defined]
        flashinfer.chunk_gated_delta_rule = flashinfer.gdn_prefill.chunk_gated_delta_rule  # type: ignore[attr-defined]
        yield {name: module for name, module in sys.modules.items() if name.startswith("flashinfer")}


class Launches:
    """What the stood-in launches received, by route."""

    def __init__(self) -> None:
        self.routes: list[str] = []
        self.kwargs: list[dict[str, Any]] = []

    def record(self, route: str, kwargs: dict[str, Any]) -> None:
        self.routes.append(route)
        self.kwargs.append(kwargs)


def _kda_output(kw: dict[str, Any]) -> torch.Tensor:
    """What KDA gives for a call's keyword arguments (q (1, T, H, K) packed with cu_seqlens)."""
    gate = kw["g"][0].float()
    if kw.get("use_gate_in_kernel", True):
        gate = lower_bound_gate(gate, kw["A_log"], kw["dt_bias"], kw["lower_bound"])
    beta = kw["beta"][0].float()
    beta = beta.sigmoid() if kw.get("beta_is_logit", True) else beta
    scale = kw["scale"] if kw["scale"] is not None else kw["q"].shape[-1] ** -0.5
    out = recurrence("kda", kw["q"][0], kw["k"][0], kw["v"][0], gate, beta, scale, kw["cu_seqlens"])
    return out[None].to(kw["q"].dtype)


def _gdn_output(o: torch.Tensor, q: Any, k: Any, v: Any, alpha: Any, beta: Any, cu: Any, scale: float) -> None:
    """GDN for FlashInfer's prefill arguments (q and k already normalised by it), written to o."""
    out = recurrence("gated_delta_rule", q, k, v, alpha.float().log(), beta.float(), scale, cu, normalised=True)
    o.copy_(out.to(o.dtype))


@pytest.fixture
def launches(layer: dict[str, Any], monkeypatch: pytest.MonkeyPatch) -> Launches:
    made = Launches()
    recurrent_module = layer["flashinfer.kda_kernels.recurrent_kda"]
    monkeypatch.setattr(recurrent_module, "_get_compiled_kernel", lambda *a, **k: lambda *args: None)
    monkeypatch.setattr(recurrent_module, "_get_grouped_compiled", lambda *a, **k: lambda *args: None)
    decode = layer["flashinfer.kda_decode"]
    real_recurrent = decode._run_recurrent_kda

    def recurrent(**kw: Any) -> Any:  # the library's wrapper runs; its launch did nothing
        out, state = real_recurrent(**kw)
        made.record("recurrent", kw)
        out.copy_(_kda_output(kw).reshape(out.shape))
        return out, state

    monkeypatch.setattr(decode, "_run_recurrent_kda", recurrent)
    for module, name in PREFILL_ROUTES:

        def prefill(route: str = name, **kw: Any) -> Any:
            made.record(route, kw)
            return _kda_output(kw), None

        monkeypatch.setattr(layer[module], name, prefill)
    _stand_in_gdn(layer, monkeypatch, made)
    return made


def _stand_in_gdn(layer: dict[str, Any], monkeypatch: pytest.MonkeyPatch, made: Launches) -> None:
    gdn = layer["flashinfer.gdn_prefill"]
    norm = layer["flashinfer.gdn_kernels.qk_l2norm"]
    monkeypatch.setattr(norm, "normalize_qk", lambda q, k: (F.normalize(q, dim=-1), F.normalize(k, dim=-1)))
    monkeypatch.setattr(torch.cuda.nvtx, "range", lambda *a, **k: nullcontext())
    real_sm90 = gdn.chunk_gated_delta_rule_sm90

    def sm90(
        o: Any,
        state: Any,
        q: Any,
        k: Any,
        v: Any,
        init: Any,
        alpha: Any,
        beta: Any,
        cu: Any,
        scale: Any,
        *a: Any,
        **kw: Any,
    ) -> None:
        real_sm90(o, state, q, k, v, init, alpha, beta, cu, scale, *a, **kw)  # its checks; the launch a stub
        made.record("gdn sm90", {"q": q, "k": k, "v": v, "alpha": alpha, "beta": beta})
        _gdn_output(o, q, k, v, alpha, beta, cu, scale)

    def cp_sm90(
        o: Any, state: Any, q: Any, k: Any, v: Any, alpha: Any, beta: Any, cu: Any, scale: Any, **kw: Any
    ) -> None:
        made.record(
            "gdn cp sm90", {"q": q, "k": k, "v": v, "alpha": alpha, "beta": beta, "max_seqlen": kw["max_seqlen"]}
        )
        _gdn_output(o, q, k, v, alpha, beta, cu, scale)

    monkeypatch.setattr(gdn, "chunk_gated_delta_rule_sm90", sm90)
    monkeypatch.setattr(gdn, "cp_delta_rule_dsl_sm90", cp_sm90)


def _at(monkeypatch: pytest.MonkeyPatch, arch: tuple[int, int]) -> None:
    on_gpu(monkeypatch, arch, ("flashinfer",))


@pytest.mark.parametrize("arch", (SM100, (12, 0)), ids=("SM100", "SM120"))
@pytest.mark.parametrize("bshd", (False, True), ids=("check-drawing", "bshd-drawing"))
def test_kda_flashinfer_reaches_a_prefill_kernel_at_batch_2_with_value_heads(
    launches: Launches, monkeypatch: pytest.MonkeyPatch, bshd: bool, arch: tuple[int, int]
) -> None:
    """Defect: without the in-kernel gate and cu_seqlens, FlashInfer's dispatch falls to its
    decode kernel, which raises 'Decode only supports T=1 without cu_seqlens'."""
    _at(monkeypatch, arch)
    c = case("kda", bshd=bshd)
    out = run("kda", "flashinfer", c)
    expected = "_run_sm120_kda_prefill" if arch == (12, 0) else "_run_kda_prefill_cute_small_bh"
    assert launches.routes == [expected]  # small-BH: 2 sequences × 2 heads against 132 SMs
    assert rel_error(out, reference("kda", c)) < BF16_TOLERANCE
    kw = launches.kwargs[-1]
    assert kw["q"].shape == (1, 32, 2, 128) and kw["cu_seqlens"].dtype == torch.int64


def test_kda_flashinfer_is_refused_on_sm90_saying_it_has_no_prefill_kernel_there(
    launches: Launches, monkeypatch: pytest.MonkeyPatch
) -> None:
    _at(monkeypatch, SM90)
    impl = linbench.get_variant("kda").impl("flashinfer")
    reason = impl.unavailable_reason(torch.device("cuda"))
    assert reason is not None and "no KDA prefill kernel for SM90" in reason and "flashinfer-recurrent" in reason
    with pytest.raises(ImplUnavailableError, match="no KDA prefill kernel for SM90"):
        run("kda", "flashinfer", case("kda"))
    assert not launches.routes


@pytest.mark.parametrize("arch", (SM90, SM100), ids=("SM90", "SM100"))
def test_kda_flashinfer_recurrent_times_the_recurrent_kernel_and_names_it(
    launches: Launches, monkeypatch: pytest.MonkeyPatch, arch: tuple[int, int]
) -> None:
    _at(monkeypatch, arch)
    c = case("kda")
    backends.take_noted()
    out = run("kda", "flashinfer-recurrent", c)
    assert launches.routes == ["recurrent"]
    assert "recurrent" in (backends.take_noted() or "")
    assert rel_error(out, reference("kda", c)) < BF16_TOLERANCE
    assert launches.kwargs[0]["v"].shape[2] == 2 and launches.kwargs[0]["q"].shape[2] == 1  # value heads natively


def test_kda_flashinfer_recurrent_runs_a_pack_from_zero_at_each_boundary(
    launches: Launches, monkeypatch: pytest.MonkeyPatch
) -> None:
    _at(monkeypatch, SM90)
    c, segments = case("kda", batch=1, seq=24), Segments((0, 10, 24))
    out = run_packed("kda", "flashinfer-recurrent", c, segments)
    assert rel_error(out, reference("kda", c, segments)) < BF16_TOLERANCE


@pytest.mark.parametrize(("heads", "v_heads"), ((2, 2), (1, 2)), ids=("equal-heads", "value-heads"))
@pytest.mark.parametrize("cp", (False, True), ids=("one-pass", "context-parallel"))
@pytest.mark.parametrize("bshd", (False, True), ids=("check-drawing", "bshd-drawing"))
def test_gdn_flashinfer_on_sm90_at_batch_2(
    launches: Launches,
    layer: dict[str, Any],
    monkeypatch: pytest.MonkeyPatch,
    bshd: bool,
    cp: bool,
    heads: int,
    v_heads: int,
) -> None:
    """Defects: views (not contiguous) for check's drawing, and v, g, β reshaped with q's head
    count under GVA; FlashInfer's SM90 wrapper raises 'v must be contiguous'."""
    _at(monkeypatch, SM90)
    monkeypatch.setattr(layer["flashinfer.gdn_prefill"], "should_use_cp_host", lambda *a, **k: cp)
    c = case("gated-deltanet", bshd=bshd, heads=heads, v_heads=v_heads)
    out = run("gated-deltanet", "flashinfer", c)
    assert launches.routes == ["gdn cp sm90" if cp else "gdn sm90"]
    tensors = [t for t in launches.kwargs[0].values() if isinstance(t, torch.Tensor)]
    assert all(t.is_contiguous() for t in tensors)
    assert launches.kwargs[0]["alpha"].dtype == torch.float32 and launches.kwargs[0]["v"].shape[1] == v_heads
    assert rel_error(out, reference("gated-deltanet", c)) < BF16_TOLERANCE
    if cp:  # the CP grids sized by one sequence, not by the batch's tokens (FlashInfer's default)
        assert launches.kwargs[0]["max_seqlen"] == c.v.shape[2]


def test_gdn_flashinfer_refuses_head_size_64_as_its_sm90_kernel_does() -> None:
    """Defect: 'DSL kernel only supports D=128' (delta_rule_sm90.py:2415) was a RuntimeError."""
    impl = linbench.get_variant("gated-deltanet").impl("flashinfer")
    assert impl.unsupported_reason(64, 64, "bf16") is not None
    assert impl.unsupported_reason(128, 128, "bf16") is None


@pytest.mark.parametrize("cp", (False, True), ids=("one-pass", "context-parallel"))
def test_gdn_flashinfer_runs_a_pack(
    launches: Launches, layer: dict[str, Any], monkeypatch: pytest.MonkeyPatch, cp: bool
) -> None:
    _at(monkeypatch, SM90)
    monkeypatch.setattr(layer["flashinfer.gdn_prefill"], "should_use_cp_host", lambda *a, **k: cp)
    c, segments = case("gated-deltanet", batch=1, seq=24), Segments((0, 9, 24))
    out = run_packed("gated-deltanet", "flashinfer", c, segments)
    assert rel_error(out, reference("gated-deltanet", c, segments)) < BF16_TOLERANCE
    if cp:  # the longest sequence of the pack: FlashInfer checks it lies within ceil(24 / 2) .. 24
        assert launches.kwargs[0]["max_seqlen"] == 15


@pytest.mark.parametrize(
    ("variant", "impl", "arch"),
    [("kda", "flashinfer", SM100), ("kda", "flashinfer-recurrent", SM90), ("gated-deltanet", "flashinfer", SM90)],
)
def test_linbench_check_passes_at_batch_2_with_value_heads(
    launches: Launches, monkeypatch: pytest.MonkeyPatch, variant: str, impl: str, arch: tuple[int, int]
) -> None:
    _at(monkeypatch, arch)
    check_at_batch_2_with_value_heads(variant, impl, monkeypatch)
    assert launches.routes
