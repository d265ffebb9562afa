"""Which source files each impl runs, and which impls a change to some files touches.

An impl's code is derived from the import graph, not listed by hand: the module of its function
(and of the functions that function closes over: a variant's input preparation, its feature map)
and every ``linbench`` module those import, transitively, as grimp (the graph import-linter
checks the package's layers on, lazy imports included) finds them. Files outside the package
that an impl runs are declared on the impl (``Impl.sources``: csrc/ for the impls on the
compiled kernels), since no import leads to them.

A file that the impls of every registered variant run (the variant machinery: declarations,
errors, the registry) is *shared*: a change to it is measured by whatever a suite measures,
since every point runs it, and does not make a gate measure every impl. A file no impl runs
(the runner, the measurement code, the reports) is infrastructure in the same sense.
``linbench ab`` and ``linbench compare --changed-since`` use this (docs/gate.md).
"""

from __future__ import annotations

import functools
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import grimp

from linbench.variants.registry import get_variant, list_variants

PACKAGE = "linbench"
# The repository root: the folder that holds the package; paths below are relative to it.
ROOT = Path(__file__).resolve().parents[1]


@dataclass(frozen=True)
class Touched:
    """What a set of changed files means for the impls: ``impls`` maps each impl
    (``variant:impl``) whose own code changed to the changed files it runs; ``shared`` are
    changed files every variant's impls run; ``other`` changed files no impl runs;
    ``unchanged``, files set apart before this mapping whose code is the same (comments,
    docstrings, layout: ab/code_diff.py)."""

    impls: Mapping[str, tuple[str, ...]]
    shared: tuple[str, ...]
    other: tuple[str, ...]
    unchanged: tuple[str, ...] = ()

    @property
    def names(self) -> tuple[str, ...]:
        return tuple(self.impls)

    @property
    def infrastructure(self) -> tuple[str, ...]:
        """The changed files of the package that widen nothing: shared, or run by no impl
        (the runner, the measurement code); docs, tests and suites are no code a point runs."""
        return (*self.shared, *(path for path in self.other if path.startswith(PACKAGE + "/")))


def impl_code() -> dict[str, frozenset[str]]:
    """Every registered impl (``variant:impl``) and the files it runs, relative to the
    repository root (``linbench/variants/gated/impls.py``, ``csrc/``: a folder ends in /)."""
    graph = grimp.build_graph(PACKAGE, cache_dir=None)
    code: dict[str, frozenset[str]] = {}
    for variant_name in list_variants():
        for impl_name, impl in get_variant(variant_name).impls.items():
            modules = _own_modules(impl.fn)
            reached = set(modules)
            for module in modules & set(graph.modules):
                reached |= graph.find_upstream_modules(module)
            files = {path for module in reached if (path := module_file(module)) is not None}
            code[f"{variant_name}:{impl_name}"] = frozenset(files | set(impl.sources))
    return code


def touched(changed: Iterable[str], code: Mapping[str, frozenset[str]]) -> Touched:
    """What the changed files (paths relative to the repository root) touch in ``code``
    (impl_code's map): each impl whose files include one, unless the file is shared by
    every variant; the shared files and the files no impl runs apart."""
    variants_of = _variants_by_file(code)
    all_variants = {name.split(":")[0] for name in code}
    impls: dict[str, list[str]] = {}
    shared, other = [], []
    for path in sorted(set(changed)):
        owners = [name for name, files in code.items() if any(_covers(entry, path) for entry in files)]
        if not owners:
            other.append(path)
        elif len(all_variants) > 1 and variants_of.get(path, set()) >= all_variants:
            shared.append(path)
        else:
            for name in owners:
                impls.setdefault(name, []).append(path)
    ordered = {name: tuple(impls[name]) for name in code if name in impls}
    return Touched(ordered, tuple(shared), tuple(other))


def _variants_by_file(code: Mapping[str, frozenset[str]]) -> dict[str, set[str]]:
    variants: dict[str, set[str]] = {}
    for name, files in code.items():
        for path in files:
            variants.setdefault(path, set()).add(name.split(":")[0])
    return variants


def _covers(entry: str, path: str) -> bool:
    """Whether the code entry ``entry`` (a file, or a folder ending in /) holds ``path``."""
    return path.startswith(entry) if entry.endswith("/") else path == entry


def _own_modules(fn: Callable[..., Any], depth: int = 4) -> set[str]:
    """The modules of ``fn`` and of the functions it closes over or is a partial of, and theirs in
    turn (``depth`` wrappers deep): a form built by a factory (feature_forms/impls.py) runs the
    variant's function it was given, and a gated form's preparation is itself wrapped (GVA's
    per_value_head) around the variant's own."""
    while isinstance(fn, functools.partial):
        fn = fn.func
    modules = {str(getattr(fn, "__module__", ""))}
    for cell in getattr(fn, "__closure__", None) or ():
        try:
            held = cell.cell_contents
        except ValueError:  # an empty cell
            continue
        if callable(held) and not isinstance(held, type):
            modules |= _own_modules(held, depth - 1) if depth > 1 else {str(getattr(held, "__module__", ""))}
    return {module for module in modules if module == PACKAGE or module.startswith(PACKAGE + ".")}


def module_file(module: str) -> str | None:
    """The file of a linbench module, relative to the repository root."""
    parts = module.split(".")
    base = ROOT.joinpath(*parts)
    for candidate in (base.with_suffix(".py"), base / "__init__.py"):
        if candidate.is_file():
            return candidate.relative_to(ROOT).as_posix()
    return None
