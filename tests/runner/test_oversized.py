"""A sweep of bare variant names leaves out the points of a form whose declared working set
cannot fit the memory a worker may take; a form named explicitly still runs (CPU, nothing runs)."""

from __future__ import annotations

import pytest
import torch

import linbench.runner.plan as plan_module
from linbench.runner.plan import make_plan
from linbench.shape import Shape
from linbench.sweep.estimate import working_set_bytes
from linbench.sweep.points import Point
from linbench.sweep.request import SweepRequest
from linbench.sweep.spec import build_spec
from linbench.variants.declarations import Impl, powers_in_s_and_d
from linbench.variants.registry import get_variant, register_variant, unregister_variant
from linbench.variants.variant import Variant

GIB = 1 << 30


def _plan(variants: tuple[str, ...], available_bytes: int, monkeypatch: pytest.MonkeyPatch):
    # The worker's share of what is available when the plan is made (plan.CPU_MEMORY_SHARE).
    monkeypatch.setattr(plan_module, "available_memory_bytes", lambda: available_bytes)
    request = SweepRequest(command="run", variants=variants, no_against=True, seq="1k..4k", device="cpu")
    return make_plan(build_spec(request), torch.device("cpu"), "test cpu")


def _lengths(plan, impl: str) -> list[int]:
    return [point.shape.seq for point in plan.points if point.impl == impl]


def test_the_declarations_give_the_powers_of_s_and_d() -> None:
    assert powers_in_s_and_d("O(s²d)") == (2, 1)
    assert powers_in_s_and_d("O(s²)") == (2, 0)
    assert powers_in_s_and_d("O(sd)") == (1, 1)
    assert powers_in_s_and_d("O(d²)") == (0, 2)


def test_a_quadratic_form_s_least_working_set() -> None:
    point = Point("gla", "quadratic", "fwd", True, "fp32", "cpu", Shape(1, 8, 2048, 64, 64))
    # Two fp32 tensors of B·H·S²·Dk: 16 GiB at 2k (gla:quadratic measured 8 GiB at 1k, 4 such tensors).
    assert working_set_bytes(point, 2, 1) == 2 * 8 * 2048**2 * 64 * 4 == 16 * GIB


def test_a_bare_variant_name_leaves_out_a_form_that_cannot_fit(monkeypatch: pytest.MonkeyPatch) -> None:
    plan = _plan(("gla",), 19 * GIB, monkeypatch)  # a worker may take 15.2 GiB: 8 GiB at 1k fits, 32 at 2k not
    assert _lengths(plan, "quadratic") == [1024]
    assert _lengths(plan, "chunked") == [1024, 2048, 4096]  # O(sd): a few MiB
    (note,) = [note for note in plan.targets.notes if "gla:quadratic" in note]
    assert note.startswith("gla:quadratic left out at 2k, 4k: its O(s²d) working set needs at least 32.0 GiB there")
    assert note.endswith("name it (--variant gla:quadratic) to run it anyway")


def test_a_form_measured_to_hold_more_copies_is_left_out_where_the_least_would_have_run_it(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """gla:quadratic held 4 tensors of B·H·S²·Dk (8 GiB at 1k): on a machine with 24 GiB
    available (19.2 GiB a worker) two would say 16 GiB fits at 2k, where it ran out of memory."""
    assert get_variant("gla").impl("quadratic").working_copies == 4
    point = Point("gla", "quadratic", "fwd", True, "fp32", "cpu", Shape(1, 8, 2048, 64, 64))
    assert working_set_bytes(point, 2, 1, 4) == 32 * GIB
    plan = _plan(("gla",), 24 * GIB, monkeypatch)
    assert _lengths(plan, "quadratic") == [1024]
    assert get_variant("cosine").impl("quadratic").working_copies is None  # measured at the least: 2
    # kda's quadratic form holds the same per-channel S²·Dk tensors (8.6 GB at 1k): left out at 2k too.
    assert _lengths(_plan(("kda",), 24 * GIB, monkeypatch), "quadratic") == [1024]


def test_a_form_named_explicitly_runs_wherever_asked(monkeypatch: pytest.MonkeyPatch) -> None:
    plan = _plan(("gla:quadratic", "gla:chunked"), 20 * GIB, monkeypatch)
    assert _lengths(plan, "quadratic") == [1024, 2048, 4096]
    assert not any("left out at" in note for note in plan.targets.notes)


def test_a_bare_name_keeps_the_forms_that_fit(monkeypatch: pytest.MonkeyPatch) -> None:
    request = SweepRequest(command="run", variants=("softmax:naive",), no_against=True, seq="4k", device="cpu")
    spec = build_spec(request)
    monkeypatch.setattr(plan_module, "available_memory_bytes", lambda: 128 << 20)  # a worker may take 102 MiB
    assert [point.impl for point in make_plan(spec, torch.device("cpu"), "test cpu").points] == ["naive"]
    bare = build_spec(SweepRequest(command="run", variants=("softmax",), no_against=True, seq="4k", device="cpu"))
    plan = make_plan(bare, torch.device("cpu"), "test cpu")
    assert "naive" not in {point.impl for point in plan.points} and "sdpa" in {point.impl for point in plan.points}


def test_a_bare_name_with_nothing_left_that_fits_is_refused(monkeypatch: pytest.MonkeyPatch) -> None:
    def scores(q: torch.Tensor, k: torch.Tensor, v: torch.Tensor, *, causal: bool) -> torch.Tensor:
        return (q @ k.transpose(-1, -2)).softmax(-1) @ v

    impl = Impl("scores", scores, "S×S scores", "O(s²d)", "O(s²)")
    register_variant(Variant("test-all-s-by-s", "softmax", (impl,), "scores", (), lambda *a: 0.0, "O(s²d)", "O(s²)"))
    try:
        request = SweepRequest(command="run", variants=("test-all-s-by-s",), no_against=True, seq="4k", device="cpu")
        # 64 MiB: a worker may take 51 MiB; q, k and v take 24 MiB, two S×S tensors 1 GiB.
        monkeypatch.setattr(plan_module, "available_memory_bytes", lambda: 64 << 20)
        with pytest.raises(ValueError, match=r"^nothing to run: test-all-s-by-s:scores left out at 4k"):
            make_plan(build_spec(request), torch.device("cpu"), "test cpu")
    finally:
        unregister_variant("test-all-s-by-s")


def test_a_point_whose_inputs_alone_cannot_fit_is_left_to_the_sweep_s_refusal(monkeypatch: pytest.MonkeyPatch) -> None:
    # 1 MiB: softmax:naive's S×S does not fit at 4k, but neither do q, k and v (3 MiB): check_fits says so.
    request = SweepRequest(command="run", variants=("softmax",), no_against=True, seq="16k", device="cpu")
    monkeypatch.setattr(plan_module, "available_memory_bytes", lambda: 1 << 20)
    plan = make_plan(build_spec(request), torch.device("cpu"), "test cpu")
    assert {point.impl for point in plan.points} >= {"naive", "sdpa"}


def _pack_plan(variants: tuple[str, ...], available_bytes: int, monkeypatch: pytest.MonkeyPatch):
    monkeypatch.setattr(plan_module, "available_memory_bytes", lambda: available_bytes)
    # 9 sequences of 70 to 4782 tokens in 8k (seed 0), run packed and padded.
    request = SweepRequest(pack="lognormal:mean=1k", tokens=(8192,), variants=variants, no_against=True, device="cpu")
    return make_plan(build_spec(request), torch.device("cpu"), "test cpu")


def test_a_pack_leaves_out_a_form_whose_working_set_cannot_fit(monkeypatch: pytest.MonkeyPatch) -> None:
    """A bare kda in a pack run: its quadratic form holds B·H·S²·Dk per sequence (packed, the
    longest's: 4782 tokens, 175 GiB in its 4 copies) or for the padded batch (9 × 4782): left
    out with the reason, as a plain run leaves it out, before it spends its time limit."""
    plan = _pack_plan(("kda",), 24 * GIB, monkeypatch)
    assert {(point.impl, point.packing) for point in plan.points} == {
        (impl, way) for impl in ("recurrent", "chunked") for way in ("packed", "padded")
    }
    (note,) = [note for note in plan.targets.notes if "kda:quadratic" in note]
    assert note.startswith(
        "kda:quadratic left out at the pack packed (its longest sequence, 4782), the pack padded (9 × 4782): "
        "its O(s²d) working set needs at least 174.5 GiB there"
    )
    # Named, it runs the pack as asked.
    assert {p.packing for p in _pack_plan(("kda:quadratic",), 24 * GIB, monkeypatch).points} == {"packed", "padded"}


def test_a_packed_quadratic_form_is_sized_by_its_longest_sequence(monkeypatch: pytest.MonkeyPatch) -> None:
    """Packed, softmax:naive attends within each sequence in turn: its S×S scores are the
    longest sequence's (1 × 8 × 4782² fp32 in 2 copies: 1.4 GiB), not the whole pack's (16 GiB
    at 8k). With 4 GiB (a worker 3.2 GiB) it runs packed and is left out padded (9 × 4782)."""
    plan = _pack_plan(("softmax",), 4 * GIB, monkeypatch)
    assert ("naive", "packed") in {(point.impl, point.packing) for point in plan.points}
    assert ("naive", "padded") not in {(point.impl, point.packing) for point in plan.points}
