"""No file of the package imports one that imports it back, directly or through others (device:
none; grimp reads the sources, lazy and TYPE_CHECKING imports included, as import-linter does).

A circle of files has no floor order: whichever is read first sees the other half-built, and a
reader cannot learn one without the other. The package root counts too: a room that imports
``linbench`` for a name climbs to the public API the root loads (runner/api.py and up).
"""

from __future__ import annotations

from pathlib import Path

import pytest

grimp = pytest.importorskip("grimp")

# Circles that remain, each to be broken by the work named beside it; a circle that is gone
# must leave this list, so the list says what is still true.
KNOWN: dict[frozenset[str], str] = {
    frozenset({"linbench.fleet.fake_runner", "linbench.fleet.real_runner", "linbench.fleet.seam"}): (
        "the fleet's runner registry and its test runner (issue 38, item 1)"
    ),
    frozenset({"linbench.cli.fleet_flow", "linbench.cli.fleet_report"}): "the fleet's CLI flow (issue 38, item 1)",
}


def circles(package: str) -> set[frozenset[str]]:
    """The sets of ``package``'s modules that import each other round a circle (the strongly
    connected components of more than one module of its import graph; Tarjan, iteratively)."""
    graph = grimp.build_graph(package, cache_dir=None)
    edges = {m: sorted(graph.find_modules_directly_imported_by(m) & graph.modules) for m in graph.modules}
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on_stack: set[str] = set()
    found: set[frozenset[str]] = set()
    for root in sorted(edges):
        if root in index:
            continue
        work = [(root, 0)]
        while work:
            module, next_edge = work.pop()
            if next_edge == 0:
                index[module] = low[module] = len(index)
                stack.append(module)
                on_stack.add(module)
            for position in range(next_edge, len(edges[module])):
                target = edges[module][position]
                if target not in index:
                    work += [(module, position + 1), (target, 0)]
                    break
                if target in on_stack:
                    low[module] = min(low[module], index[target])
            else:
                if low[module] == index[module]:
                    component = set()
                    while True:
                        member = stack.pop()
                        on_stack.discard(member)
                        component.add(member)
                        if member == module:
                            break
                    if len(component) > 1:
                        found.add(frozenset(component))
                if work:
                    parent = work[-1][0]
                    low[parent] = min(low[parent], low[module])
    return found


def test_circles_finds_a_circle_and_only_that(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    package = tmp_path / "circled"
    package.mkdir()
    for name, line in {"__init__": "", "a": "from circled import b", "b": "from circled import c",
                       "c": "import circled.a", "d": "from circled import a"}.items():  # fmt: skip
        (package / f"{name}.py").write_text(line + "\n")
    monkeypatch.syspath_prepend(str(tmp_path))
    assert circles("circled") == {frozenset({"circled.a", "circled.b", "circled.c"})}


def test_no_file_imports_one_that_imports_it_back() -> None:
    found = circles("linbench")
    new = [sorted(circle) for circle in found if circle not in KNOWN]
    assert not new, f"import circles: {new}"
    gone = [why for circle, why in KNOWN.items() if circle not in found]
    assert not gone, f"these circles are broken now, take them off KNOWN: {gone}"
