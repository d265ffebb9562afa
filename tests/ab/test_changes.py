"""Which impls a change touches, and what ab does about them: on a small git repository made
for the test (the diff) and on linbench's own import graph (the impls). No device, no rounds."""

from __future__ import annotations

import subprocess
from pathlib import Path

import pytest

from linbench.ab.changes import changed_files, changes_since, widen
from linbench.ab.code_diff import WHOLE, CodeChange
from linbench.ab.ran_code import Ran
from linbench.impl_code import Touched, impl_code, touched

GATED = ("retention", "lightning", "simple-gla", "gla", "deltanet", "gated-deltanet", "kda", "mamba2", "gdn2", "rwkv7")
GATE_SUITE_BEFORE = {"cosine:chunked", "cosine:kernel", "linear:chunked", "softmax:sdpa"}


def _git(repo: Path, *args: str) -> None:
    subprocess.run(["git", "-C", str(repo), *args], capture_output=True, text=True, check=True)


@pytest.fixture
def repo(tmp_path: Path) -> Path:
    """A repository holding linbench/variants/gated/triangular.py and a runner file, committed."""
    for path in ("linbench/variants/gated/triangular.py", "linbench/runner/worker.py", "README.md"):
        (tmp_path / path).parent.mkdir(parents=True, exist_ok=True)
        (tmp_path / path).write_text("x = 1\n")
    _git(tmp_path, "init", "-q")
    _git(tmp_path, "add", ".")
    _git(tmp_path, "-c", "user.name=t", "-c", "user.email=t@t", "commit", "-qm", "base")
    return tmp_path


def _head(repo: Path) -> str:
    return subprocess.run(["git", "-C", str(repo), "rev-parse", "HEAD"], capture_output=True, text=True).stdout.strip()


def test_the_diff_holds_changed_staged_and_untracked_files_but_not_ignored_ones(repo: Path) -> None:
    base = _head(repo)
    assert changed_files(repo, base) == []
    (repo / "linbench/variants/gated/triangular.py").write_text("x = 2  # the inverse, twice\n")
    (repo / "README.md").write_text("changed\n")
    _git(repo, "add", "README.md")
    (repo / "linbench/variants/gated/new_form.py").write_text("y = 1\n")
    (repo / ".gitignore").write_text("results/\n")
    (repo / "results").mkdir()
    (repo / "results/run.csv").write_text("a\n")
    assert changed_files(repo, base) == [
        ".gitignore",
        "README.md",
        "linbench/variants/gated/new_form.py",
        "linbench/variants/gated/triangular.py",
    ]


def test_a_planted_change_in_gated_code_widens_the_gate_to_the_gated_impls(repo: Path) -> None:
    base = _head(repo)
    (repo / "linbench/variants/gated/triangular.py").write_text("x = 2  # the inverse, twice\n")
    changes = touched(changed_files(repo, base), impl_code())
    assert {name.split(":")[0] for name in changes.names} == set(GATED)
    assert {f"{v}:chunked" for v in GATED} <= set(changes.names)
    assert changes.impls["gated-deltanet:chunked"] == ("linbench/variants/gated/triangular.py",)

    widened = widen(changes, GATE_SUITE_BEFORE, dict.fromkeys(changes.names), enabled=True)
    assert set(widened.added) == set(changes.names) and not widened.left_out and not widened.measured
    assert "gated-deltanet:chunked" in widened.lines()[0]

    refused = widen(changes, GATE_SUITE_BEFORE, dict.fromkeys(changes.names), enabled=False)
    assert not refused.added and set(refused.left_out) == set(changes.names)
    assert "changed code: gated-deltanet:chunked is not measured: --no-widen" in refused.lines()


def test_an_impl_that_cannot_run_here_is_left_out_with_its_reason() -> None:
    changes = touched(["linbench/variants/gated/triangular.py"], impl_code())
    refusals = dict.fromkeys(changes.names) | {"gla:chunked": "no such device"}
    widened = widen(changes, set(), refusals, enabled=True)
    assert widened.left_out == {"gla:chunked": "it cannot run here (no such device)"}
    assert "gla:chunked" not in widened.added and "gated-deltanet:chunked" in widened.added


def test_added_impls_past_the_cap_are_left_out_in_order_with_their_predicted_time() -> None:
    changes = touched(["linbench/variants/gated/triangular.py"], impl_code())
    widened = widen(changes, set(), dict.fromkeys(changes.names), enabled=True)
    first, second, *rest = widened.added
    costs: dict[str, float | None] = {first: 40.0, second: 300.0} | dict.fromkeys(rest, 10.0)
    capped = widened.priced(costs, max_s=100.0)
    assert capped.added == (first, *rest[:6])  # 40 s, then 10 s each while the total stays within 100 s
    assert set(capped.left_out) == set(widened.added) - set(capped.added)
    said = "its points would take about 5 min over the rounds, past --max-widen-s 100 (40 s already added)"
    assert capped.left_out[second] == said
    assert f"{first} (about 40 s over the rounds)" in capped.lines()[0]
    uncapped = widened.priced({first: None}, max_s=None)
    assert uncapped.added == widened.added and "(time unknown)" in uncapped.lines()[0]


def test_an_impl_traced_running_none_of_its_changed_files_is_neither_added_nor_counted_changed() -> None:
    """The import graph ties kda's quadratic form to the chunked form's file; traced, it runs
    delta_quadratic.py only, so it is not added. Not traced (None), or tied to csrc/, which
    no Python frame shows, an impl keeps the import graph's answer."""
    chunked_file = "linbench/variants/gated/delta_chunked.py"
    changes = Touched(
        {
            "kda:chunked": (chunked_file,),
            "kda:quadratic": (chunked_file,),
            "kda:recurrent": (chunked_file,),
            "cosine:kernel": ("csrc/",),
        },
        (),
        (),
    )
    widened = widen(changes, {"kda:chunked"}, dict.fromkeys(changes.names), enabled=True)
    ran: dict[str, Ran | None] = {
        "kda:chunked": Ran(frozenset({chunked_file})),
        "kda:quadratic": Ran(frozenset({"linbench/variants/gated/delta_quadratic.py"})),
        "kda:recurrent": None,
        "cosine:kernel": Ran(frozenset()),
    }
    narrowed = widened.running(ran, {}, frozenset())
    assert narrowed.measured == ("kda:chunked",)
    assert narrowed.added == ("kda:recurrent", "cosine:kernel")
    assert narrowed.not_run == {"kda:quadratic": (chunked_file,)}
    said = (
        f"changed code: kda:quadratic run(s) none of the changed code of {chunked_file} at the sweep's shapes "
        "(traced by function; the import graph ties them to it): not counted as changed"
    )
    assert said in narrowed.lines()
    # An impl the sweep measures is traced too: not running the change, its points are not first.
    assert widened.running({**ran, "kda:chunked": Ran(frozenset())}, {}, frozenset()).measured == ()


SHARED = "linbench/variants/gated/impls.py"  # builds every gated form
CHUNKED_FN = (SHARED, 133)  # the chunked form's function, built by a factory at line 132
FACTORY = (SHARED, 132)


@pytest.mark.parametrize(
    ("change", "at_import", "recurrent_runs_it"),
    [
        (CodeChange(False, frozenset({"_chunked_impl.<locals>.chunked"}), frozenset({133})), frozenset(), False),
        # What building the variants runs, every form built runs: a factory changed.
        (CodeChange(False, frozenset({"_chunked_impl"}), frozenset({132})), frozenset({FACTORY}), True),
        (CodeChange(False, frozenset({"_chunked_impl.<locals>.chunked"}), frozenset({133})), None, True),
        (WHOLE, frozenset(), True),
    ],
)
def test_a_change_to_a_shared_module_counts_for_the_impls_that_run_its_changed_functions(
    change: CodeChange, at_import: frozenset[tuple[str, int]] | None, recurrent_runs_it: bool
) -> None:
    """One function of the module that builds every gated form changed: the chunked form,
    which enters it, runs the change; the recurrent form, which holds the module but enters
    another function, does not, unless building the forms runs the change (a factory, or not
    known: None), or the module's import-time code changed (WHOLE)."""
    changes = Touched({"kda:chunked": (SHARED,), "kda:recurrent": (SHARED,)}, (), ())
    widened = widen(changes, {"kda:chunked"}, dict.fromkeys(changes.names), enabled=True)
    ran = {
        "kda:chunked": Ran(frozenset({SHARED}), frozenset({CHUNKED_FN})),
        "kda:recurrent": Ran(frozenset({SHARED}), frozenset({(SHARED, 110)})),
    }
    narrowed = widened.running(ran, {SHARED: change}, at_import)
    assert narrowed.measured == ("kda:chunked",)
    assert narrowed.added == (("kda:recurrent",) if recurrent_runs_it else ())
    assert ("kda:recurrent" in narrowed.not_run) is not recurrent_runs_it


def test_a_change_to_comments_and_docstrings_only_changes_no_impl(repo: Path) -> None:
    base = _head(repo)
    path = repo / "linbench/variants/gated/triangular.py"
    path.write_text('"""The inverse."""\n\nx = 1  # twice\n')
    changes = changes_since(repo, base)
    assert changes.unchanged == ("linbench/variants/gated/triangular.py",) and not changes.impls
    said = "changed code: linbench/variants/gated/triangular.py: comments, docstrings or layout only"
    assert any(line.startswith(said) for line in widen(changes, (), {}, enabled=True).lines())
    path.write_text("x = 2\n")
    assert changes_since(repo, base).impls and changes_since(repo, base).unchanged == ()
