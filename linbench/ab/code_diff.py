"""Which functions of a Python file a change touches, read from the file's syntax tree before
and after rather than from the diff's lines.

A change to the module that builds every gated form (variants/gated/impls.py) tied all 30 gated
forms to it, so ``linbench ab`` added 20 forms to the CPU gate's 36 points, and no count of
rounds that fits the gate's 270 s could judge 56 changed points on the 2-core CI machine: a
harmless edit there was INCONCLUSIVE, and a slowdown in one form's code went unjudged
(docs/evidence.md, 2026-11-29). What changed is mostly one function, which only some forms run.

Each function's own code (its body, nested functions replaced by their signature, docstring
left out) is compared as an ``ast.dump``, which holds no line numbers, comments or layout; the
rest of the module (its statements, class bodies, each function's signature, decorators and
default values: what runs when the module is imported) is compared the same way. A change to
that rest is ``whole``: every user of the module runs it. A file that is not Python, is added
or removed, or does not parse is ``whole`` too. A change that leaves both alike (comments,
docstrings, layout) is no change of code (``none``).
"""

from __future__ import annotations

import ast
import copy
from dataclasses import dataclass


@dataclass(frozen=True)
class CodeChange:
    """What a change does to one file's code: ``whole``, its import-time code changed (or it
    cannot be read function by function); ``functions``, the qualified names (``f``,
    ``C.m``, ``f.<locals>.g``) of the functions whose own code changed, was added or removed;
    ``first_lines``, where those of them that the file still has start, as a code object's
    ``co_firstlineno`` (its first decorator's line, or the ``def``'s), which tracing matches."""

    whole: bool
    functions: frozenset[str] = frozenset()
    first_lines: frozenset[int] = frozenset()

    @property
    def none(self) -> bool:
        """Whether no code changed: comments, docstrings and layout only."""
        return not self.whole and not self.functions


WHOLE = CodeChange(whole=True)


@dataclass(frozen=True)
class _Parts:
    module: list[tuple[str | None, str]]  # the import-time code: each statement's dump, a plain function's by name
    functions: dict[str, list[str]]  # qualified name -> each definition's own code, dumped
    first_lines: dict[str, list[int]]  # qualified name -> each definition's co_firstlineno


def code_change(before: str | None, after: str | None) -> CodeChange:
    """The change from source ``before`` to source ``after`` (None: the file is absent then)."""
    old, new = _parts(before), _parts(after)
    if old is None or new is None:
        return WHOLE
    if _import_time(old, new) != _import_time(new, old):
        return WHOLE
    names = old.functions.keys() | new.functions.keys()
    changed = frozenset(name for name in names if old.functions.get(name) != new.functions.get(name))
    lines = frozenset(line for name in changed for line in new.first_lines.get(name, ()))
    return CodeChange(whole=False, functions=changed, first_lines=lines)


def _parts(source: str | None) -> _Parts | None:
    if source is None:
        return None
    try:
        tree = ast.parse(source)
    except (SyntaxError, ValueError):
        return None
    splitter = _Splitter()
    module = splitter.visit(tree)
    _drop_docstring(module)
    statements = [(_plain_function(node), ast.dump(node)) for node in module.body]
    return _Parts(statements, splitter.functions, splitter.first_lines)


def _import_time(parts: _Parts, other: _Parts) -> list[str]:
    """``parts``' import-time code, less the plain functions ``other`` does not define: adding
    a helper defines a name that only a changed function can call (that change is the one that
    counts, and the helper's own code is among the changed functions where it runs)."""
    names = {name for name, _ in other.module if name is not None}
    return [dump for name, dump in parts.module if name is None or name in names]


def _plain_function(node: ast.stmt) -> str | None:
    """The name of a module-level function whose definition runs nothing at import: no
    decorator, and default values that are constants."""
    if not isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef) or node.decorator_list:
        return None
    defaults = [*node.args.defaults, *(value for value in node.args.kw_defaults if value is not None)]
    return node.name if all(isinstance(value, ast.Constant) for value in defaults) else None


class _Splitter(ast.NodeTransformer):
    """Takes each function's own code out of the tree (recorded under its qualified name),
    leaving its signature, decorators and default values where it is defined."""

    def __init__(self) -> None:
        self.functions: dict[str, list[str]] = {}
        self.first_lines: dict[str, list[int]] = {}
        self._scope: list[str] = []

    def visit_FunctionDef(self, node: ast.FunctionDef) -> ast.AST:
        return self._function(node)

    def visit_AsyncFunctionDef(self, node: ast.AsyncFunctionDef) -> ast.AST:
        return self._function(node)

    def visit_ClassDef(self, node: ast.ClassDef) -> ast.AST:
        self._scope.append(node.name)
        self.generic_visit(node)
        self._scope.pop()
        _drop_docstring(node)
        return node

    def _function(self, node: ast.FunctionDef | ast.AsyncFunctionDef) -> ast.AST:
        name = ".".join([*self._scope, node.name])
        first = min([node.lineno, *(decorator.lineno for decorator in node.decorator_list)])
        self._scope += [node.name, "<locals>"]
        self.generic_visit(node)  # nested functions become signatures, recorded on their own
        self._scope[-2:] = []
        _drop_docstring(node)
        # Its parameters' names are its body's too: renaming one changes what the body reads.
        own = ast.dump(node.args) + ast.dump(ast.Module(body=node.body, type_ignores=[]))
        self.functions.setdefault(name, []).append(own)
        self.first_lines.setdefault(name, []).append(first)
        signature = copy.copy(node)
        signature.body = [ast.Pass()]
        return signature


def _drop_docstring(node: ast.Module | ast.ClassDef | ast.FunctionDef | ast.AsyncFunctionDef) -> None:
    """Leave out a body's docstring, which no call runs."""
    body = node.body
    first = body[0] if body else None
    if isinstance(first, ast.Expr) and isinstance(first.value, ast.Constant) and isinstance(first.value.value, str):
        node.body = body[1:]
