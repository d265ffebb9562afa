"""A function's signature read from an installed package's source, without importing it: the
kernel libraries (FlashQLA, ...) raise on import without their GPU, yet their argument names and
order are in their files. ``signature.bind(**kwargs)`` then fails on CPU when an impl passes an
argument the installed function no longer takes."""

from __future__ import annotations

import ast
import importlib.util
import inspect
from pathlib import Path


def installed_file(package: str, relative: str) -> Path | None:
    """``relative`` inside the installed ``package`` (found without importing it), or None."""
    spec = importlib.util.find_spec(package)
    if spec is None or not spec.submodule_search_locations:
        return None
    path = Path(next(iter(spec.submodule_search_locations))) / relative
    return path if path.is_file() else None


def installed_module_file(module: str) -> Path | None:
    """The source file of the installed top-level ``module`` (found without importing it), or None."""
    spec = importlib.util.find_spec(module)
    return Path(spec.origin) if spec is not None and spec.origin and spec.origin.endswith(".py") else None


def source_signature(path: Path, function: str) -> inspect.Signature:
    """The signature of the top-level ``function`` defined in ``path`` (defaults as placeholders)."""
    tree = ast.parse(path.read_text())
    # The last definition: a function with ``@overload`` stubs is defined after them.
    node = [n for n in tree.body if isinstance(n, ast.FunctionDef) and n.name == function][-1]
    args = node.args
    kinds = [
        (args.posonlyargs, inspect.Parameter.POSITIONAL_ONLY),
        (args.args, inspect.Parameter.POSITIONAL_OR_KEYWORD),
    ]
    positional = [(arg, kind) for group, kind in kinds for arg in group]
    first_default = len(positional) - len(args.defaults)
    params = [
        inspect.Parameter(arg.arg, kind, default=None if i >= first_default else inspect.Parameter.empty)
        for i, (arg, kind) in enumerate(positional)
    ]
    if args.vararg is not None:
        params.append(inspect.Parameter(args.vararg.arg, inspect.Parameter.VAR_POSITIONAL))
    for arg, default in zip(args.kwonlyargs, args.kw_defaults, strict=True):
        empty = inspect.Parameter.empty
        params.append(
            inspect.Parameter(arg.arg, inspect.Parameter.KEYWORD_ONLY, default=empty if default is None else None)
        )
    if args.kwarg is not None:
        params.append(inspect.Parameter(args.kwarg.arg, inspect.Parameter.VAR_KEYWORD))
    return inspect.Signature(params)
