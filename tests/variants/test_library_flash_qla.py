"""gated-deltanet's ``flash-qla`` through flash-qla 0.1.3's own Python layer (CPU, as SM90:
library_layers.py; TileLang stood in). FlashQLA's checks, its autograd function, its
context-parallel planning (``_auto_intra_cp_context``, ``build_cp_context``,
``cp_preprocess_fwd``) run for real; its TileLang kernels (q/k norm, chunk-local cumsum, the
KKᵀ solve, the fused forward) are stood in, the last computing the output from fla's naive
gated delta rule.
"""

from __future__ import annotations

import sys
from collections.abc import Iterator
from typing import Any

import pytest
import torch
import torch.nn.functional as F
from library_cases import BF16_TOLERANCE, case, check_at_batch_2_with_value_heads, reference, rel_error, run, run_packed
from library_layers import installed, library_layer, on_gpu, recurrence, sequences

import linbench
from linbench.variants.varlen import Segments

pytestmark = pytest.mark.skipif(
    not installed("flash-qla"),
    reason="flash-qla is not installed (pip install --no-deps flash-qla==0.1.3; see .ci/run)",
)
CHUNK = 64


@pytest.fixture(scope="module")
def chunk() -> Iterator[Any]:
    """FlashQLA's chunk module, imported as on SM90 (it picks its kernels on import)."""
    with library_layer("flash_qla", ("tilelang",)):
        with pytest.MonkeyPatch.context() as patch:  # a GPU only while it imports: each test sets its own
            on_gpu(patch, (9, 0))
            import tilelang

            tilelang.contrib.nvcc.get_target_compute_version = lambda *args: "9.0"
            tilelang.cdiv = lambda a, b: -(-a // b)  # TileLang's ceiling division: CP's planning counts chunks
            import flash_qla  # noqa: F401
        yield sys.modules["flash_qla.ops.gated_delta_rule.chunk"]


def _rows(x: torch.Tensor, cu: torch.Tensor | None) -> list[tuple[int, int, int]]:
    """(batch row, first token, end) of every sequence of (B, T, ...) ``x``."""
    if cu is not None:
        return [(0, a, b) for a, b in sequences(x.shape[1], cu)]
    return [(row, 0, x.shape[1]) for row in range(x.shape[0])]


def _chunks(x: torch.Tensor, cu: torch.Tensor | None) -> list[tuple[int, int, int]]:
    return [(row, c, min(c + CHUNK, b)) for row, a, b in _rows(x, cu) for c in range(a, b, CHUNK)]


@pytest.fixture
def kernels(chunk: Any, monkeypatch: pytest.MonkeyPatch) -> list[dict[str, Any]]:
    on_gpu(monkeypatch, (9, 0), ("flash_qla",))
    seen: list[dict[str, Any]] = []

    def cumsum(g: torch.Tensor, cu_seqlens: Any = None, chunk_size: int = CHUNK, **kw: Any) -> torch.Tensor:
        out = g.float().clone()
        for row, a, b in _chunks(g, cu_seqlens):
            out[row, a:b] = g[row, a:b].float().cumsum(0)
        return out

    def fused_fwd(
        q: Any, k: Any, v: Any, a: Any, g: Any, b: Any, scale: float, cu_seqlens: Any = None, **kw: Any
    ) -> Any:
        seen.append({"q": q, "k": k, "v": v, "g": g, "beta": b, "cu_seqlens": cu_seqlens, **kw})
        log_gate = g.clone()  # back from the chunk-local cumsum the kernel is given
        for row, start, end in _chunks(g, cu_seqlens):
            log_gate[row, start + 1 : end] = g[row, start + 1 : end] - g[row, start : end - 1]
        o = torch.empty_like(v)
        for row, start, end in _rows(v, cu_seqlens):
            part = (x[row, start:end] for x in (q, k, v, log_gate, b))
            o[row, start:end] = recurrence("gated_delta_rule", *part, scale, None, normalised=True).to(v.dtype)
        return o, None, None

    monkeypatch.setattr(chunk, "l2norm_fwd", lambda x: (F.normalize(x.float(), dim=-1).to(x.dtype), None))
    monkeypatch.setattr(chunk, "chunk_local_cumsum", cumsum)
    monkeypatch.setattr(chunk, "kkt_solve", lambda k, b, **kw: torch.zeros(*b.shape, CHUNK))
    monkeypatch.setattr(chunk, "fused_gdr_fwd", fused_fwd)
    # The cu_seqlens FlashQLA makes for a single sequence, on this CPU instead of cuda:{index},
    # cached as FlashQLA's own is (its tensor_cache, by value): the plan made for it is reused.
    tensor_cache = sys.modules["flash_qla.utils.index"].tensor_cache
    make_cu = tensor_cache(lambda batch, tokens, index: torch.arange(batch + 1, dtype=torch.int32) * tokens)
    monkeypatch.setattr(chunk, "_create_cu_seqlens", make_cu)
    return seen


@pytest.mark.parametrize("bshd", (False, True), ids=("check-drawing", "bshd-drawing"))
def test_a_batch_of_2_with_value_heads_natively(kernels: list[dict[str, Any]], bshd: bool) -> None:
    c = case("gated-deltanet", bshd=bshd)
    assert rel_error(run("gated-deltanet", "flash-qla", c), reference("gated-deltanet", c)) < BF16_TOLERANCE
    assert kernels[-1]["v"].shape[2] == 2 and kernels[-1]["q"].shape[2] == 1
    assert linbench.get_variant("gated-deltanet").impl("flash-qla").gva  # results no longer say "expanded"


def test_a_pack_in_one_call_with_its_cu_seqlens(kernels: list[dict[str, Any]]) -> None:
    c, segments = case("gated-deltanet", batch=1, seq=24), Segments((0, 7, 24))
    out = run_packed("gated-deltanet", "flash-qla", c, segments, warmed=True)
    assert rel_error(out, reference("gated-deltanet", c, segments)) < BF16_TOLERANCE
    assert len(kernels) == 2 and kernels[-1]["cu_seqlens"].dtype == torch.int64  # the warm-up call, the timed one


def _split_by_context_parallelism(chunk: Any, monkeypatch: pytest.MonkeyPatch) -> None:
    """FlashQLA's decision made to split every sequence past 4 chunks, and its CP kernels (the
    warm-up chunk counts, the per-piece states, their correction) stood in by zeros of their
    shapes: the planning and the dispatch between them run for real; the output is not judged."""
    context = sys.modules["flash_qla.ops.gated_delta_rule.chunk.cp.context"]
    monkeypatch.setattr(context, "AUTOCP_MODEL", True)
    monkeypatch.setattr(context, "autocp_decide", lambda **kw: (True, 4))

    def warmup_chunks(g: Any, cu_seqlens: Any, ht_mask: Any, chunk_size: int = CHUNK, **kw: Any) -> Any:
        pieces = (cu_seqlens.numel() - 1, g.shape[-1])
        return torch.zeros(pieces, dtype=cu_seqlens.dtype), torch.zeros(pieces, dtype=torch.bool)

    def piece_states(k: Any, v: Any, cu_seqlens: Any, **kw: Any) -> Any:
        states = torch.zeros(cu_seqlens.numel() - 1, v.shape[2], k.shape[-1], v.shape[-1])
        return None, states, states.clone()

    monkeypatch.setattr(chunk, "get_warmup_chunks", warmup_chunks)
    monkeypatch.setattr(chunk, "fused_gdr_h", piece_states)
    monkeypatch.setattr(chunk, "correct_initial_states", lambda ht_buffer, **kw: torch.zeros_like(ht_buffer))


@pytest.mark.parametrize(
    ("packed", "split"),
    ((False, False), (True, False), (False, True), (True, True)),
    ids=("one-sequence", "pack", "one-sequence-split", "pack-split"),
)
def test_flash_qla_plans_its_context_parallelism_in_the_first_call_and_the_timed_calls_reuse_it(
    kernels: list[dict[str, Any]], chunk: Any, monkeypatch: pytest.MonkeyPatch, packed: bool, split: bool
) -> None:
    """FlashQLA's default auto_cp (intra-card context parallelism for a batch of one, which its
    calibrated SM90 model picks at H16 from 8k tokens forward and from 1k in training) is
    kept. It plans on the host (``raw_cu_seqlens.tolist()``) and caches the plan by the
    cu_seqlens tensor: the runner's untimed first call plans; the timed calls read nothing on
    the host, whether the plan keeps a sequence whole (1 chunk) or splits it (5 chunks, the
    decision made to split past 4). (Passing auto_cp=False, as linbench once did, timed FlashQLA
    without it.)"""
    if split:
        _split_by_context_parallelism(chunk, monkeypatch)
    c = case("gated-deltanet", batch=1, seq=320 if split else 24)
    segments = (Segments((0, 40, 320)) if split else Segments((0, 7, 24))) if packed else None
    with pytest.raises(AssertionError, match=r"a host sync inside the timed call: Tensor\.tolist"):
        _run(c, segments)  # a first call plans: had linbench timed it, the planning would be in the figure
    assert _run(c, segments, warmed=True).shape == c.v.shape
    pieces = kernels[-1]["cu_seqlens"].tolist()  # what the timed call's forward kernel was handed
    if not split:
        assert pieces == ([0, 7, 24] if packed else [0, 24])
    else:  # 4 chunks (256 tokens) a piece at most
        assert pieces == ([0, 40, 296, 320] if packed else [0, 256, 320])


def _run(c: Any, segments: Segments | None, warmed: bool = False) -> torch.Tensor:
    if segments is None:
        return run("gated-deltanet", "flash-qla", c, warmed=warmed)
    return run_packed("gated-deltanet", "flash-qla", c, segments, warmed=warmed)


def test_linbench_check_passes_at_batch_2_with_value_heads(
    kernels: list[dict[str, Any]], monkeypatch: pytest.MonkeyPatch
) -> None:
    check_at_batch_2_with_value_heads("gated-deltanet", "flash-qla", monkeypatch)
    assert kernels
