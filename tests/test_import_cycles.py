"""No file of the package imports one that imports it back, directly or through others (device:
none; grimp reads the sources, lazy and TYPE_CHECKING imports included, as import-linter does).

A circle of files has no floor order: whichever is read first sees the other half-built, and a
reader cannot learn one without the other. The package root counts too: a room that imports
``linbench`` for a name climbs to the public API the root loads (runner/sweeps.py and up).
"""

from __future__ import annotations

import sys
from pathlib import Path
from typing import Any

import pytest

if sys.version_info >= (3, 11):
    import tomllib
else:  # pragma: no cover - Python 3.10
    import tomli as tomllib

grimp = pytest.importorskip("grimp")

ROOT = Path(__file__).resolve().parents[1]

# Circles that remain, each with the work that will break it (none today); a circle that is gone
# must leave this list, so the list says what is still true.
KNOWN: dict[frozenset[str], str] = {}


@pytest.fixture(scope="module")
def graph() -> Any:
    return grimp.build_graph("linbench", cache_dir=None)


def circles(graph: Any) -> set[frozenset[str]]:
    """The sets of the graph's modules that import each other round a circle (the strongly
    connected components of more than one module; Tarjan, iteratively)."""
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
    assert circles(grimp.build_graph("circled", cache_dir=None)) == {frozenset({"circled.a", "circled.b", "circled.c"})}


def test_no_file_imports_one_that_imports_it_back(graph: Any) -> None:
    found = circles(graph)
    new = [sorted(circle) for circle in found if circle not in KNOWN]
    assert not new, f"import circles: {new}"
    gone = [why for circle, why in KNOWN.items() if circle not in found]
    assert not gone, f"these circles are broken now, take them off KNOWN: {gone}"


def test_only_the_floors_above_the_runner_import_the_package_root(graph: Any) -> None:
    """The root loads the public API from runner/sweeps.py and the floors below it, so a room on
    the runner's floor or below that imports the root climbs to it (as runner/provenance.py did
    for the version, which version.py, below every floor, now holds). import-linter's floors
    place the rooms, not the root, so they do not see this."""
    config = tomllib.loads((ROOT / "pyproject.toml").read_text())["tool"]["importlinter"]["contracts"]
    (layers,) = [contract["layers"] for contract in config if contract["id"] == "floors"]
    floors = [{room.strip(" ()") for room in layer.split("|")} for layer in layers]
    runner_floor = next(index for index, rooms in enumerate(floors) if "runner" in rooms)
    above = set().union(*floors[:runner_floor])
    importers = graph.find_modules_that_directly_import("linbench")
    assert all(module.split(".")[1] in above for module in importers), sorted(importers)
