"""Which files and functions an impl's calls run at a sweep's shapes, traced: real calls of linbench's own
impls on the CPU, and a small package made for the test for what a module holds from its
import. The plans are CPU plans; nothing is timed."""

from __future__ import annotations

import sys
from collections.abc import Iterator
from dataclasses import replace
from pathlib import Path
from types import SimpleNamespace

import pytest
import torch

from linbench.ab import ran_code
from linbench.ab.ran_code import import_time_sources, ran_by_impl, ran_files, run_at_import, untraceable
from linbench.impl_code import ROOT
from linbench.sweep.points import Point
from linbench.sweep.request import SweepRequest

GATED = "linbench/variants/gated/"
SMALL = SweepRequest(variants=("kda:chunked",), seq="64,128", batch=1, heads=2, dim=16, device="cpu")


def test_a_gated_form_runs_its_own_forms_file_and_not_the_other_forms() -> None:
    """One module builds kda's three forms and picks each form's code at call time, so the
    import graph ties them all to every form's file; traced, each runs its own."""
    ran = ran_by_impl(SMALL, ["kda:chunked", "kda:quadratic", "kda:recurrent"])
    assert all(ran.values())
    chunked, quadratic, recurrent = (ran[f"kda:{form}"].files for form in ("chunked", "quadratic", "recurrent"))  # type: ignore[union-attr]
    assert GATED + "delta_chunked.py" in chunked and GATED + "triangular.py" in chunked
    assert GATED + "delta_quadratic.py" in quadratic and GATED + "delta_chunked.py" not in quadratic
    assert GATED + "delta_recurrent.py" in recurrent and GATED + "delta_chunked.py" not in recurrent
    # What every form runs is in every trace: the module that dispatches them, the numerics.
    assert all(GATED + "impls.py" in files for files in (chunked, quadratic, recurrent))


def _first_line(function: object) -> tuple[str, int]:
    code = function.__code__  # type: ignore[attr-defined]
    return str(Path(code.co_filename).resolve().relative_to(ROOT).as_posix()), code.co_firstlineno


def test_each_form_enters_its_own_function_of_the_module_that_builds_every_form() -> None:
    """variants/gated/impls.py builds each form's function in a factory; traced, the chunked
    form enters the chunked function, the recurrent form does not, and building the variants
    (traced in a new process) runs the factories but none of the forms' functions."""
    from linbench.variants.gated import impls

    chunked = _first_line(impls._chunked_impl("kda", lambda *a, **k: None))
    recurrent = _first_line(impls._recurrent_impl("kda", lambda *a, **k: None))
    ran = ran_by_impl(SMALL, ["kda:chunked", "kda:recurrent"])
    assert ran["kda:chunked"] is not None and ran["kda:recurrent"] is not None
    assert chunked in ran["kda:chunked"].functions and chunked not in ran["kda:recurrent"].functions
    assert recurrent in ran["kda:recurrent"].functions and recurrent not in ran["kda:chunked"].functions
    at_import = run_at_import()
    assert at_import is not None
    assert _first_line(impls._chunked_impl) in at_import and _first_line(impls.gated_impls) in at_import
    assert chunked not in at_import and recurrent not in at_import


def test_an_impl_is_traced_at_the_shortest_length_the_rounds_measure_it_at(monkeypatch: pytest.MonkeyPatch) -> None:
    seen: list[int] = []

    def traced(point: Point, plan: object) -> set[tuple[str, int]]:
        seen.append(point.shape.seq)
        return set()

    monkeypatch.setattr(ran_code, "traced_call", traced)
    ran_by_impl(SMALL, ["kda:recurrent"])
    assert seen == [64]


@pytest.mark.parametrize(
    ("impl", "why"),
    [
        ("linear:compiled", "its kernels are torch compile (inductor)'s, not Python frames"),
        ("cosine:kernel", "its kernels are linbench csrc's, not Python frames"),
    ],
)
def test_an_impl_whose_kernels_are_not_python_frames_keeps_the_import_graphs_answer(impl: str, why: str) -> None:
    plan = SimpleNamespace(kind=SimpleNamespace(name="run"), device=torch.device("cpu"))
    point = SimpleNamespace(variant=impl.split(":")[0], impl=impl.split(":")[1], packing="", mode="fwd")
    assert untraceable(point, plan) == why  # type: ignore[arg-type]
    request = SweepRequest(variants=(impl,), seq="64", batch=1, heads=2, dim=16, device="cpu")
    assert ran_by_impl(request, [impl]) == {impl: None}


def test_a_backward_off_the_cpu_and_a_pack_are_not_traced() -> None:
    """The autograd engine runs a GPU's backward on threads of its own, which a profile
    function set on this thread does not see; a pack is not one attention call."""
    point = SimpleNamespace(variant="kda", impl="chunked", packing="", mode="fwdbwd")
    on_gpu = SimpleNamespace(kind=SimpleNamespace(name="run"), device=torch.device("cuda"))
    on_cpu = SimpleNamespace(kind=SimpleNamespace(name="run"), device=torch.device("cpu"))
    assert untraceable(point, on_gpu) == "a backward off the CPU runs on the autograd engine's own threads"  # type: ignore[arg-type]
    assert untraceable(point, on_cpu) is None  # type: ignore[arg-type]
    packed = SimpleNamespace(variant="kda", impl="chunked", packing="packed", mode="fwd")
    assert untraceable(packed, on_cpu) == "it is not one attention call"  # type: ignore[arg-type]


def test_a_backward_on_the_cpu_is_traced_into_the_forms_backward() -> None:
    """fwdbwd on the CPU: the backward runs on the calling thread, so its frames are seen."""
    from linbench.devices import resolve_device
    from linbench.runner.plan import make_plan
    from linbench.sweep.spec import build_spec

    spec = build_spec(replace(SMALL, seq="64", modes=("fwdbwd",)))
    plan = make_plan(spec, resolve_device("cpu"), "cpu")
    assert {point.mode for point in plan.points} == {"fwdbwd"}
    ran = ran_files(plan, "kda:chunked")
    assert ran is not None and GATED + "delta_chunked.py" in ran.files


def test_a_call_that_fails_keeps_the_import_graphs_answer(monkeypatch: pytest.MonkeyPatch) -> None:
    def fails(point: object, plan: object) -> set[tuple[str, int]]:
        raise RuntimeError("out of memory")

    monkeypatch.setattr(ran_code, "traced_call", fails)
    assert ran_by_impl(SMALL, ["kda:chunked"]) == {"kda:chunked": None}


@pytest.fixture
def package(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Iterator[str]:
    """A package ``heldpkg`` standing in for linbench: ``user`` holds a constant and a class of
    ``values``, a table built at import by ``builders``, and calls ``helpers`` only later."""
    root = tmp_path / "heldpkg"
    root.mkdir()
    files = {
        "__init__.py": "",
        "values.py": "LIMIT = 3\n\nclass Table:\n    size = 4\n",
        "builders.py": "def built():\n    return [1, 2]\n",
        "helpers.py": "def helper(x):\n    return x + 1\n",
        "user.py": (
            "from heldpkg.values import LIMIT, Table\n"
            "from heldpkg.builders import built\n"
            "from heldpkg.helpers import helper\n"
            "from . import helpers as later\n\n"
            "TABLE = built()\n\n\n"
            "def run(x=LIMIT):\n    return helper(x) + later.helper(x)\n"
        ),
        "plain.py": "from heldpkg.helpers import helper\n\n\ndef run(x):\n    return helper(x)\n",
    }
    for name, text in files.items():
        (root / name).write_text(text)
    monkeypatch.syspath_prepend(str(tmp_path))
    monkeypatch.setattr(ran_code, "PACKAGE", "heldpkg")
    yield "heldpkg"
    for name in [module for module in sys.modules if module.split(".")[0] == "heldpkg"]:
        del sys.modules[name]


def test_a_module_holds_the_values_it_imports_and_what_it_builds_at_import(package: str) -> None:
    """A constant or class from ``values``, a table ``builders`` built while ``user`` was
    imported, and a module imported whole: values no call enters. A function only called
    later is left to the trace, which sees its call."""
    import importlib

    importlib.import_module("heldpkg.user")
    importlib.import_module("heldpkg.plain")
    assert import_time_sources("heldpkg.user") == {"heldpkg.values", "heldpkg.builders", "heldpkg.helpers"}
    assert import_time_sources("heldpkg.plain") == set()
