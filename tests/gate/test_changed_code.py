"""A comparison that knows which impls' code changed: one neither run measured keeps it from
passing, and the verdict names it; a point whose impl runs the same code on both sides does not
hold it open. Comparisons built in memory: no device, nothing timed."""

from __future__ import annotations

from linbench.gate.compare import Comparison
from linbench.gate.render import verdict_line
from linbench.gate.verdict import ChangedCode, Coverage


def _comparison(changed: ChangedCode | None) -> Comparison:
    coverage = Coverage.of(2, 0, 0, {"cosine:chunked"}, {"cosine:chunked"})
    return Comparison("base", "cur", [], [], [], [], coverage=coverage, changed=changed)


def test_a_changed_impl_neither_run_measured_makes_the_comparison_inconclusive() -> None:
    changed = ChangedCode("main", ("cosine:chunked", "gated-deltanet:chunked"), ("linbench/runner/worker.py",))
    comparison = _comparison(changed)
    assert comparison.unmeasured == ("gated-deltanet:chunked",)
    assert comparison.verdict == "inconclusive"
    assert "1 changed impl(s) not measured" in verdict_line(comparison)
    lines = changed.lines(comparison.covered())
    assert lines[0].startswith("1 changed impl(s) since main were measured by neither run: gated-deltanet:chunked")
    assert "measured: cosine:chunked" in lines[1] and "linbench/runner/worker.py" in lines[2]
    assert comparison.to_json()["changed_code"]["unmeasured"] == ["gated-deltanet:chunked"]


def test_changed_impls_that_were_measured_or_no_changes_at_all_let_it_pass() -> None:
    assert _comparison(ChangedCode("main", ("cosine:chunked",))).verdict == "pass"
    assert _comparison(ChangedCode("main", ())).verdict == "pass"
    assert _comparison(None).verdict == "pass"


def test_an_impl_traced_running_none_of_the_changed_files_is_named_apart_and_lets_it_pass() -> None:
    changed = ChangedCode("main", ("cosine:chunked",), not_run=("kda:quadratic",))
    comparison = _comparison(changed)
    assert comparison.verdict == "pass" and comparison.unmeasured == ()
    said = (
        "1 impl(s) tied to the changed files by imports ran none of their changed code at the measured shapes "
        "(traced by function)"
    )
    assert any(
        line.startswith(said) and line.endswith(": kda:quadratic") for line in changed.lines(comparison.covered())
    )
    assert comparison.to_json()["changed_code"]["not_run"] == ["kda:quadratic"]


def test_an_impl_runs_the_same_code_only_where_neither_it_nor_a_file_every_point_runs_changed() -> None:
    assert ChangedCode("main", ("kda:chunked",)).same_code("cosine:chunked")
    assert not ChangedCode("main", ("kda:chunked",)).same_code("kda:chunked")
    assert not ChangedCode("main", (), ("linbench/runner/worker.py",)).same_code("cosine:chunked")


def test_unchanged_code_files_are_named_apart() -> None:
    changed = ChangedCode("main", (), unchanged=("linbench/variants/gated/impls.py",))
    lines = changed.lines(_comparison(changed).covered())
    assert lines == [
        "1 changed file(s) hold the same code (comments, docstrings or layout only) and change no impl: "
        "linbench/variants/gated/impls.py"
    ]
