"""The interpreter's bridges and what a run makes of interpreted kernels (CPU; Triton needed only by the
third bridge's test)."""

from __future__ import annotations

import ast
import sys
import types

import pytest
import torch

from linbench.runner.kinds import RUN
from linbench.variants.feature_forms import fla as fla_common
from linbench.variants.feature_forms import triton_interpreter as ti
from linbench.variants.selection import select_impls


@pytest.mark.parametrize(("value", "on"), [("1", True), ("true", True), ("0", False), ("", False)])
def test_the_interpreter_is_on_as_triton_reads_the_variable(
    monkeypatch: pytest.MonkeyPatch, value: str, on: bool
) -> None:
    monkeypatch.setenv("TRITON_INTERPRET", value)
    assert ti.interpreter_on() is on


def test_a_loop_variable_is_made_a_tensor_first_in_its_body() -> None:
    """The interpreter's own rewrite of an assignment, put first in a loop over a plain name."""
    tree = ast.parse("for i_t in range(3):\n    x = i_t\nfor a, b in pairs:\n    pass\n")
    rewritten = ti._loop_variable_transformer(ast.NodeTransformer)().visit(tree)
    first = rewritten.body[0].body[0]
    assert ast.unparse(first) == "i_t = interpreter_semantic.to_tensor(i_t, False)"
    assert ast.unparse(rewritten.body[1].body[0]) == "pass"  # a tuple target is left as it is


def test_the_autotuner_sees_a_tie_so_keeps_its_first_config() -> None:
    assert ti._same_time_for_every_config(None, config="a") == ti._same_time_for_every_config(None, config="b")


def test_a_builtin_bound_to_another_name_is_made_a_jitted_call_of_it(monkeypatch: pytest.MonkeyPatch) -> None:
    """fla's ``gather = tl.gather`` (the third gap): replaced in the modules under the prefix, and
    only with the interpreter on. Needs Triton (the jitted replacement is Triton's)."""
    tl = pytest.importorskip("triton.language")
    aliased, elsewhere = types.ModuleType("fla.fake_op"), types.ModuleType("other.fake_op")
    aliased.gather = elsewhere.gather = tl.gather  # type: ignore[attr-defined]
    monkeypatch.setitem(sys.modules, "fla.fake_op", aliased)
    monkeypatch.setitem(sys.modules, "other.fake_op", elsewhere)
    monkeypatch.setenv("TRITON_INTERPRET", "0")
    ti.bridge_aliased_builtins("fla.")
    assert aliased.gather is tl.gather  # type: ignore[attr-defined]
    monkeypatch.setenv("TRITON_INTERPRET", "1")
    ti.bridge_aliased_builtins("fla.")
    from linbench.variants.feature_forms import interpreted_ops

    assert aliased.gather is interpreted_ops.gather and elsewhere.gather is tl.gather  # type: ignore[attr-defined]


def test_a_run_leaves_fla_out_under_the_interpreter_saying_why(monkeypatch: pytest.MonkeyPatch) -> None:
    cpu = torch.device("cpu")
    monkeypatch.setenv("TRITON_INTERPRET", "1")
    assert "interpreter" in (ti.untimeable_reason("fla-core", cpu) or "")
    assert ti.untimeable_reason("fla-core", torch.device("cuda")) is None
    assert ti.untimeable_reason(None, cpu) is None
    monkeypatch.setattr(fla_common, "fla_unavailable", lambda *args: None)  # as if fla could run here
    reason = RUN.unavailable_reason(select_impls(["gated-deltanet:fla"])[0], cpu)
    assert reason is not None and "linbench check" in reason
    monkeypatch.setenv("TRITON_INTERPRET", "0")
    assert RUN.unavailable_reason(select_impls(["gated-deltanet:fla"])[0], cpu) is None
