"""kda's ``cudnn`` through nvidia-cudnn-frontend 1.32.0's own Python layer (CPU, as SM90:
library_layers.py): its op builds the graph, its engines check the graph and one is chosen, for
the forward and for the backward; only the chosen plan's launch (ops/kda.py ``execute_graph``)
is stood in, computing the outputs (and gradients) from fla's naive recurrence with autograd.

SM100's FROST engine imports CUTLASS's CuTe DSL at module level, beyond what a stub stands in:
its choice is not run here.
"""

from __future__ import annotations

import sys
from collections.abc import Iterator
from concurrent.futures import ThreadPoolExecutor
from typing import Any

import pytest
import torch
from library_cases import BF16_TOLERANCE, case, check_at_batch_2_with_value_heads, gradients, reference, rel_error, run
from library_layers import installed, library_layer, on_gpu, recurrence

pytestmark = pytest.mark.skipif(
    not installed("nvidia-cudnn-frontend"),
    reason="nvidia-cudnn-frontend is not installed (pip install --no-deps nvidia-cudnn-frontend==1.32.0; see .ci/run)",
)


@pytest.fixture(scope="module")
def layer() -> Iterator[dict[str, Any]]:
    """cuDNN's linear-attention modules with cuda-python stood in (and no cuTile runtime)."""
    with library_layer("cudnn", ("cuda",), absent=("cuda.tile",)):
        import cudnn.frost.buffers
        import cudnn.linear_attention.cake.compiler
        import cudnn.linear_attention.hopper.cuda_engine
        import cudnn.linear_attention.ops.common
        import cudnn.linear_attention.ops.kda  # noqa: F401

        yield {name: module for name, module in sys.modules.items() if name.startswith("cudnn")}


def _outputs(graph: Any, pack: dict[Any, torch.Tensor], analyze: Any) -> None:
    """What the chosen plan writes: O for a forward, dQ, dK, dV, dG, dBeta for a backward."""
    facts = graph._facts_for(analyze)
    named = {key.get_name().split("::")[-1]: tensor for key, tensor in pack.items()}

    def compute() -> None:  # in a thread of its own: a custom op's body runs with autograd off
        inputs = [named[name].detach().float().requires_grad_(facts.is_bwd) for name in ("q", "k", "v", "g", "beta")]
        with torch.set_grad_enabled(facts.is_bwd):
            out = recurrence("kda", *inputs, facts.scale, named["cu_seqlens"], normalised=not facts.use_qk_l2norm)
        if not facts.is_bwd:
            named["O"].copy_(out)
            return
        grads = torch.autograd.grad(out, inputs, named["dO"].float())
        for name, grad in zip(("dQ", "dK", "dV", "dG", "dBeta"), grads, strict=True):
            named[name].copy_(grad)

    with ThreadPoolExecutor(1) as pool:
        pool.submit(compute).result()


@pytest.fixture
def engines(layer: dict[str, Any], monkeypatch: pytest.MonkeyPatch) -> list[str]:
    """SM90; the engines cuDNN chose, in call order."""
    on_gpu(monkeypatch, (9, 0), ("cudnn",))
    chosen: list[str] = []
    monkeypatch.setattr(layer["cudnn.frost.buffers"], "current_sm", lambda: 90)
    monkeypatch.setattr(layer["cudnn.linear_attention.cake.compiler"], "cuda_include_dirs", lambda: ["/cuda/include"])
    monkeypatch.setattr(layer["cudnn.linear_attention.ops.common"], "get_handle", lambda *a, **k: None)
    analyze = layer["cudnn.linear_attention.hopper.cuda_engine"].analyze

    def execute(graph: Any, pack: dict[Any, torch.Tensor], workspace: Any, handle: Any) -> None:
        chosen.append(graph.selected_engine.name)
        _outputs(graph, pack, analyze)

    monkeypatch.setattr(layer["cudnn.linear_attention.ops.kda"], "execute_graph", execute)
    return chosen


@pytest.mark.parametrize("bshd", (False, True), ids=("check-drawing", "bshd-drawing"))
def test_the_forward_on_sm90_at_batch_2_with_value_heads(engines: list[str], bshd: bool) -> None:
    c = case("kda", bshd=bshd)
    assert rel_error(run("kda", "cudnn", c), reference("kda", c)) < BF16_TOLERANCE
    assert engines == ["kda_hopper_cuda"]


def test_the_backward_on_sm90_finds_its_engine_and_gives_the_gradients(engines: list[str]) -> None:
    """Defect: SM90's one backward engine refuses in-kernel L2 norms, a 16-bit β and unequal head
    counts (hopper/cuda_engine.py:433, :469, :487): every gradient point raised 'no engine'."""
    c = case("kda", seq=12)
    cotangent = torch.randn(2, 2, 12, 128, generator=torch.Generator().manual_seed(1), dtype=torch.float64)
    actual = gradients("kda", "cudnn", c, cotangent)
    expected = gradients("kda", None, c, cotangent)
    assert engines == ["kda_hopper_cuda", "kda_hopper_cuda"]
    for name, a, e in zip(("q", "k", "v", "g", "beta"), actual, expected, strict=True):
        assert rel_error(a, e) < 3 * BF16_TOLERANCE, name


def test_linbench_check_passes_at_batch_2_with_value_heads(engines: list[str], monkeypatch: pytest.MonkeyPatch) -> None:
    check_at_batch_2_with_value_heads("kda", "cudnn", monkeypatch)
    assert engines == ["kda_hopper_cuda"]


def test_fp16_on_sm90_finds_no_engine_in_cudnn_so_linbench_refuses_it_first(
    engines: list[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    """Defect: the row took fp16 on SM90, where both Hopper engines take bf16 only
    (hopper/cuda_engine.py:471, hopper/kda_engine.py:239): cuDNN's own layer finds no engine
    (or, with cuTile installed, runs cuTile's under the Hopper engine's name). linbench now
    refuses it with the reason, before any call."""
    from linbench.errors import ImplUnavailableError
    from linbench.variants.libraries.contract import Contract

    c = case("kda")
    c.q, c.k, c.v = (x.to(torch.float16) for x in (c.q, c.k, c.v))
    c.extras["beta"] = c.extras["beta"].to(torch.float16)
    with pytest.raises(ImplUnavailableError, match="kda:cudnn: SM90 takes bf16 only, not fp16"):
        run("kda", "cudnn", c)
    with monkeypatch.context() as bypass:  # linbench's refusal off: what cuDNN itself does
        bypass.setattr(Contract, "refusal", lambda self, q, arch, grad: None)
        with pytest.raises(Exception, match="no engine") as raised:
            run("kda", "cudnn", c)
    assert type(raised.value).__name__ == "cudnnGraphNotSupportedError" and engines == []


def test_the_backend_names_the_engine_cudnn_chose(
    layer: dict[str, Any], engines: list[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    """Read from cuDNN's own graph cache: kda_hopper_cuda where it serves; where it declines
    (no CUDA include tree for NVRTC), what cuDNN falls through to, or no engine at all: never
    the row's expectation in place of what ran."""
    from linbench.variants import backends

    layer["cudnn.linear_attention.ops.kda"].fprop_cache.clear()
    run("kda", "cudnn", case("kda"))
    assert engines == ["kda_hopper_cuda"]
    assert backends.take_noted() == "nvidia-cudnn-frontend kda_hopper_cuda engine"

    def no_toolkit() -> tuple[Any, ...]:
        raise RuntimeError("no CUDA include tree found")

    monkeypatch.setattr(layer["cudnn.linear_attention.cake.compiler"], "cuda_include_dirs", no_toolkit)
    layer["cudnn.linear_attention.ops.kda"].fprop_cache.clear()
    try:
        run("kda", "cudnn", case("kda"))
    except Exception as exc:  # no engine left here (no CuTe DSL, no cuTile): cuDNN's own error
        assert "no engine" in str(exc) and "NVRTC and a CUDA include tree" in str(exc)
    else:
        assert engines[-1] != "kda_hopper_cuda"
        assert backends.take_noted() == f"nvidia-cudnn-frontend {engines[-1]} engine"
