"""Which of linbench's files an impl's calls really run at a sweep's shapes, traced.

The import graph (linbench/impl_code.py) ties an impl to every module its function's module
imports. For the gated family that is every gated file: one module (variants/gated/impls.py)
builds the recurrent, quadratic and chunked forms of all ten variants and picks the form's
code when it is called, from its inputs' type. So a change to the delta rule's chunked form
(gated/delta_chunked.py) would make ``linbench ab`` add every gated recurrent and quadratic
form to the rounds (20 impls, 20 more points, twice the time of a round on the 2-core CI
machine), though none of them runs a line of it.

Here an impl is called as a timed process calls it (runner/workload.py: the inputs drawn, a
repetition's set-up and its work, twice, the second call in case the first filled a cache)
at each of the points the rounds would measure it at, under ``sys.setprofile``: every Python
function entered is recorded, by its file and first line. To them are added the modules whose values the
recorded modules hold from import time, which no call enters: a constant, a class or a module
imported from another module, and a function called while the module is imported
(``import_time_sources``), transitively.

Within a file, the functions matter too: a change to one function of the module that builds
every gated form (code_diff.py) is run only by the forms whose calls enter it, or by every
form where it runs while the variants are built. ``run_at_import`` finds the latter: the
functions entered while a new process imports linbench's variants and builds their impls,
which this process did before any trace began.

What cannot be traced here keeps the import graph's answer (None): an impl whose kernels are
not PyTorch's own operators (a library, the csrc kernels, torch.compile: their code is not
Python frames), a point that is not one attention call (a pack, a decode step), a backward on
a GPU (the autograd engine runs it on threads of its own, which ``sys.setprofile`` does not
see), and a call that fails.
"""

from __future__ import annotations

import ast
import importlib
import importlib.util
import inspect
import json
import os
import subprocess
import sys
from collections.abc import Iterable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass, replace
from pathlib import Path
from types import FrameType, ModuleType
from typing import Any

from linbench.impl_code import PACKAGE, ROOT, module_file
from linbench.runner.plan import RunPlan
from linbench.sweep.points import Point
from linbench.sweep.request import SweepRequest
from linbench.variants.backends import EAGER, declared_backend
from linbench.variants.registry import get_variant

CALLS = 2  # each point's repetitions traced: the second in case the first filled a cache
Function = tuple[str, int]  # a function of linbench: its file (from the repository root), its first line


@dataclass(frozen=True)
class Ran:
    """What an impl's traced calls ran: ``files`` (relative to the repository root), those of
    the functions it entered and of the modules they hold values of from import time;
    ``functions``, each function it entered, by file and first line (``co_firstlineno``)."""

    files: frozenset[str]
    functions: frozenset[Function] = frozenset()


def ran_files(plan: RunPlan, impl: str) -> Ran | None:
    """What ``impl``'s calls run at the points of ``plan`` it has; None where it cannot be
    traced here (the module's docstring says when), or ``plan`` has no point of it."""
    points = [point for point in plan.points if f"{point.variant}:{point.impl}" == impl]
    if not points or any(untraceable(point, plan) for point in points):
        return None
    entered: set[tuple[str, int]] = set()
    try:
        for point in points:
            entered |= traced_call(point, plan)
    except Exception:  # a call that fails here says nothing of what the impl runs
        return None
    modules = {name for path, _ in entered if (name := _module_of(path)) is not None}
    files = frozenset(path for name in held_closure(modules) if (path := module_file(name)) is not None)
    return Ran(files, ours(entered))


def ours(entered: Iterable[tuple[str, int]]) -> frozenset[Function]:
    """The functions of linbench among ``entered`` (each a source file's path and a first
    line), their files relative to the repository root."""
    found = set()
    for path, line in entered:
        if _module_of(path) is not None:
            found.add((Path(path).resolve().relative_to(ROOT).as_posix(), line))
    return frozenset(found)


# Run by run_at_import in a new process: the profile function is set before linbench is
# imported, so what the imports and the building of every variant's impls call is seen.
AT_IMPORT = """
import json, sys
entered = set()
def profile(frame, event, arg):
    if event == "call":
        entered.add((frame.f_code.co_filename, frame.f_code.co_firstlineno))
sys.setprofile(profile)
from linbench.variants.registry import get_variant, list_variants
for name in list_variants():
    for impl in get_variant(name).impls:
        get_variant(name).impl(impl)
sys.setprofile(None)
json.dump(sorted(entered), sys.stdout)
"""


def run_at_import() -> frozenset[Function] | None:
    """The functions of linbench that importing its variants and building their impls enters
    (a factory that builds a form's function; a registration), traced in a new process of
    this tree; None where that process fails."""
    env = {**os.environ, "PYTHONPATH": os.pathsep.join(filter(None, [str(ROOT), os.environ.get("PYTHONPATH")]))}
    try:
        done = subprocess.run(
            [sys.executable, "-c", AT_IMPORT], cwd=ROOT, env=env, capture_output=True, text=True, timeout=120
        )
        entered = json.loads(done.stdout) if done.returncode == 0 else None
    except (OSError, subprocess.SubprocessError, ValueError):
        return None
    return None if entered is None else ours((str(path), int(line)) for path, line in entered)


def untraceable(point: Point, plan: RunPlan) -> str | None:
    """Why ``point``'s calls cannot be traced in this process (None: they can)."""
    impl = get_variant(point.variant).impl(point.impl)
    if declared_backend(impl) != EAGER or impl.sources:
        return f"its kernels are {declared_backend(impl)}'s, not Python frames"
    if plan.kind.name != "run" or point.packing:
        return "it is not one attention call"
    if point.mode != "fwd" and plan.device.type != "cpu":
        return "a backward off the CPU runs on the autograd engine's own threads"
    return None


def traced_call(point: Point, plan: RunPlan) -> set[tuple[str, int]]:
    """Every Python function entered (its source file and first line) while ``point``'s inputs
    are drawn and it is called CALLS times as a timed process calls it."""
    from linbench.runner.workload import Workload

    with recording() as entered:
        work = Workload(point, plan.device, params=plan.point_params(point))
        for _ in range(CALLS):
            work.before()
            work.run()
    return entered


@contextmanager
def recording() -> Iterator[set[tuple[str, int]]]:
    """The Python functions entered in the block (this thread), each by its source file and
    first line."""
    entered: set[tuple[str, int]] = set()

    # A profile function, not a trace function: a coverage tool's tracer stays as it is.
    def profile(frame: FrameType, event: str, _arg: Any) -> None:
        if event == "call":
            entered.add((frame.f_code.co_filename, frame.f_code.co_firstlineno))

    previous = sys.getprofile()
    sys.setprofile(profile)
    try:
        yield entered
    finally:
        sys.setprofile(previous)


def held_closure(modules: Iterable[str]) -> set[str]:
    """``modules`` and, transitively, the modules whose values they hold from import time."""
    found = set(modules)
    todo = list(found)
    while todo:
        for source in import_time_sources(todo.pop()):
            if source not in found:
                found.add(source)
                todo.append(source)
    return found


def import_time_sources(name: str) -> set[str]:
    """The linbench modules whose values module ``name`` holds from its import: those it
    imports a module, a class or a constant from, or a function it calls (or decorates with)
    while it is imported. A function it imports and calls only later is left out: a call of
    it is a frame of its own module, which tracing sees."""
    module = sys.modules.get(name)
    source = _source_of(module)
    if module is None or source is None:
        return set()
    at_import = _names_used_at_import(source)
    found: set[str] = set()
    for node in ast.walk(source):
        if isinstance(node, ast.Import):
            found |= {alias.name for alias in node.names if _ours(alias.name)}
        elif isinstance(node, ast.ImportFrom):
            origin = _absolute(node, module)
            if origin is None or not _ours(origin):
                continue
            for alias in node.names:
                held = _held_source(origin, alias.name, (alias.asname or alias.name) in at_import)
                if held is not None:
                    found.add(held)
    return found - {name}


def _held_source(origin: str, attribute: str, used_at_import: bool) -> str | None:
    """The module whose value ``from origin import attribute`` holds, or None where it is a
    function only called later (tracing sees its calls) or cannot be found."""
    try:
        parent = importlib.import_module(origin)
    except ImportError:
        return None
    if not hasattr(parent, attribute):  # a submodule: ``from package import module``
        return f"{origin}.{attribute}" if _importable(f"{origin}.{attribute}") else None
    value = getattr(parent, attribute)
    if isinstance(value, ModuleType):
        return value.__name__ if _ours(value.__name__) else None
    if inspect.isfunction(value) and not used_at_import:
        return None
    defined = getattr(value, "__module__", None) if inspect.isclass(value) or inspect.isfunction(value) else None
    return defined if isinstance(defined, str) and _ours(defined) else origin


def _names_used_at_import(tree: ast.Module) -> set[str]:
    """The names a module's body reads while it runs: everywhere but inside the bodies of its
    functions (their decorators and default values are read)."""
    used: set[str] = set()
    todo: list[ast.AST] = list(tree.body)
    while todo:
        node = todo.pop()
        if isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef | ast.Lambda):
            todo.extend(node.args.defaults)
            todo.extend(d for d in node.args.kw_defaults if d is not None)
            if not isinstance(node, ast.Lambda):
                todo.extend(node.decorator_list)
            continue
        if isinstance(node, ast.Name):
            used.add(node.id)
        todo.extend(ast.iter_child_nodes(node))
    return used


def _source_of(module: ModuleType | None) -> ast.Module | None:
    path = getattr(module, "__file__", None)
    if not path or not path.endswith(".py"):
        return None
    try:
        return ast.parse(Path(path).read_text())
    except (OSError, SyntaxError):
        return None


def _absolute(node: ast.ImportFrom, module: ModuleType) -> str | None:
    """The module an ``from ... import`` names, relative imports resolved against ``module``."""
    if not node.level:
        return node.module
    package = module.__package__ or ""
    try:
        return importlib.util.resolve_name("." * node.level + (node.module or ""), package)
    except (ImportError, ValueError):
        return None


def _importable(name: str) -> bool:
    try:
        importlib.import_module(name)
    except ImportError:
        return False
    return True


def _ours(name: str) -> bool:
    return name == PACKAGE or name.startswith(PACKAGE + ".")


def _module_of(path: str) -> str | None:
    """The linbench module of a source file of this tree (None: another's, or not a file)."""
    try:
        relative = Path(path).resolve().relative_to(ROOT)
    except (ValueError, OSError):
        return None
    if relative.suffix != ".py" or relative.parts[0] != PACKAGE:
        return None
    parts = relative.with_suffix("").parts
    return ".".join(parts[:-1] if parts[-1] == "__init__" else parts)


def ran_by_impl(request: SweepRequest, impls: Iterable[str]) -> dict[str, Ran | None]:
    """ran_files of each of ``impls`` ("variant:impl") at the points the sweep ``request``
    asks for at its shortest length, where the rounds measure an added impl (widen_cost.py);
    None for each where the sweep cannot be planned here."""
    from linbench.ab.widen_cost import alone_with, planned, shortest

    names = list(dict.fromkeys(impls))
    plan = planned(alone_with(request, tuple(names))) if names else None
    if plan is None:
        return dict.fromkeys(names)
    plan = replace(plan, points=tuple(shortest(plan.points)))
    return {name: ran_files(plan, name) for name in names}
