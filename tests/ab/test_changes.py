"""Which impls a change touches, and what ab does about them: on a small git repository made
for the test (the diff) and on linbench's own import graph (the impls). No device, no rounds."""

from __future__ import annotations

import subprocess
from pathlib import Path

import pytest

from linbench.ab.changes import changed_files, widen
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
    ran: dict[str, frozenset[str] | None] = {
        "kda:chunked": frozenset({chunked_file}),
        "kda:quadratic": frozenset({"linbench/variants/gated/delta_quadratic.py"}),
        "kda:recurrent": None,
        "cosine:kernel": frozenset(),
    }
    narrowed = widened.running(ran)
    assert narrowed.measured == ("kda:chunked",)
    assert narrowed.added == ("kda:recurrent", "cosine:kernel")
    assert narrowed.not_run == {"kda:quadratic": (chunked_file,)}
    said = (
        f"changed code: kda:quadratic run(s) none of {chunked_file} at the sweep's shapes "
        "(traced; the import graph ties them to it): not counted as changed"
    )
    assert said in narrowed.lines()
    # An impl the sweep measures is traced too: not running the change, its points are not first.
    assert widened.running({**ran, "kda:chunked": frozenset()}).measured == ()
