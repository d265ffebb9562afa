"""fla's Triton kernels on a CPU, under Triton's interpreter (``TRITON_INTERPRET=1``).

The interpreter runs a kernel's program instances one after another in numpy on CPU tensors:
it proves what a kernel computes and how it is called (layouts, scale, gates, packs, initial
state, gradients), never how fast it is. fla-core 0.6's kernels need three things it lacks,
which linbench bridges in this process only, when the interpreter is on (nothing installed
is changed on disk):

1. Triton's autotuner times each config through the active GPU driver, and on a CPU there is
   none ("0 active drivers"). Bridged: every config "takes" the same time, so the autotuner
   keeps its first; the interpreter's result does not depend on the config.
2. The interpreter turns every assigned name into an interpreter tensor (its AST rewrite of
   ``x = value``) but not a ``for`` loop's variable, and fla's kernels call ``i_t.to(tl.int64)``
   on one ("'int' object has no attribute 'to'"). Bridged: the same rewrite, as the first
   statement of every loop body whose target is a plain name.
3. The interpreter swaps Triton's builtins for its own through the ``tl`` module a kernel
   reads, so a builtin bound to another name when a module is imported escapes it: fla-core
   0.6's ``fla/ops/utils/op.py`` sets ``gather = tl.gather``, which the DPLR chunk kernels
   (``chunk_rwkv7``, ``chunk_dplr_delta_rule``) call ("Did you forget to add @triton.jit ?").
   Bridged after fla's modules are imported (``bridge_aliased_builtins``): each such ``gather``
   replaced by a jitted function that calls ``tl.gather`` (the interpreter's, at run time).
"""

from __future__ import annotations

import ast
import os
from typing import Any

# Triton reads TRITON_INTERPRET as a boolean knob; these are the spellings it takes as on.
_ON = ("1", "true", "on", "yes")
INTERPRETED_NOTE = (
    "run under Triton's interpreter here (TRITON_INTERPRET=1): their time would be numpy's, not a GPU "
    "kernel's; `linbench check` proves them"
)
# The libraries whose kernels are Triton's (and so run interpreted on a CPU under it).
TRITON_LIBRARIES = ("fla-core", "mamba-ssm")
_bridged = False


def interpreter_on() -> bool:
    """Whether Triton runs its kernels interpreted, on the CPU (TRITON_INTERPRET set on)."""
    return os.environ.get("TRITON_INTERPRET", "").strip().lower() in _ON


def untimeable_reason(library: str | None, device: Any) -> str | None:
    """Why an impl on ``library`` must not be timed on ``device`` (a torch.device): its Triton
    kernels would run interpreted on the CPU; None where a time of it means what it says."""
    if library in TRITON_LIBRARIES and device.type == "cpu" and interpreter_on():
        return f"{library}'s Triton kernels {INTERPRETED_NOTE}"
    return None


def bridge_interpreter() -> None:
    """Bridge the interpreter's first two gaps for this process (once; only with the interpreter
    on); the third is bridged after fla's modules are imported (``bridge_aliased_builtins``)."""
    global _bridged
    if _bridged or not interpreter_on():
        return
    from triton.runtime import autotuner, interpreter

    interpreter.FunctionRewriter.ast_transformer = _loop_variable_transformer(interpreter.ASTTransformer)()
    autotuner.Autotuner._bench = _same_time_for_every_config
    _bridged = True


def bridge_aliased_builtins(prefix: str) -> None:
    """Gap 3 for the modules already imported whose names start with ``prefix`` (only with the
    interpreter on): a module-level ``gather`` that is Triton's builtin becomes
    interpreted_ops.gather, a jitted call of it."""
    if not interpreter_on():
        return
    import sys

    import triton.language as tl

    from linbench.variants.feature_forms import interpreted_ops

    for name, module in list(sys.modules.items()):
        if name.startswith(prefix) and getattr(module, "gather", None) is tl.gather:
            module.gather = interpreted_ops.gather  # type: ignore[attr-defined]


def _same_time_for_every_config(self: Any, *args: Any, config: Any, **meta: Any) -> list[float]:
    """The autotuner's per-config benchmark, interpreted: nothing to time, so a tie (the
    autotuner then keeps the first config of the tie)."""
    del self, args, config, meta
    return [0.0, 0.0, 0.0]


def _loop_variable_transformer(base: type) -> type:
    """``base`` (the interpreter's AST rewriter) that also makes a loop's variable a tensor."""

    class LoopVariableTransformer(base):
        def visit_For(self, node: ast.For) -> ast.For:  # noqa: N802 (ast.NodeVisitor calls it by this name)
            node = self.generic_visit(node)
            if isinstance(node.target, ast.Name):
                node.body.insert(0, _as_tensor(node.target.id, node))
            return node

    return LoopVariableTransformer


def _as_tensor(name: str, where: ast.AST) -> ast.stmt:
    """``name = interpreter_semantic.to_tensor(name, False)``: the interpreter's own rewrite of
    an assignment, applied to a loop variable."""
    convert = ast.Attribute(value=ast.Name(id="interpreter_semantic", ctx=ast.Load()), attr="to_tensor", ctx=ast.Load())
    value = ast.Call(func=convert, args=[ast.Name(id=name, ctx=ast.Load()), ast.Constant(value=False)], keywords=[])
    statement = ast.Assign(targets=[ast.Name(id=name, ctx=ast.Store())], value=value)
    return ast.fix_missing_locations(ast.copy_location(statement, where))
