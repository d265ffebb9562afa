"""A point runner named linbench or module:function; any other name is one line. CPU only,
nothing runs: the names are only resolved."""

from __future__ import annotations

import fake_runner
import pytest

from linbench.fleet.errors import FleetError
from linbench.fleet.real_runner import run_linbench_points
from linbench.fleet.seam import RUNNER_ENV, default_runner, runner


def test_linbench_names_its_own_runner_and_module_function_any_other() -> None:
    assert runner("linbench") is run_linbench_points
    assert runner(fake_runner.FAKE) is fake_runner.run_fake_points


@pytest.mark.parametrize(
    ("name", "words"),
    [
        ("fake", "name 'linbench' or a module:function"),
        ("no_such_module:run", "No module named 'no_such_module'"),
        ("fake_runner:no_such_function", "fake_runner has no function no_such_function"),
        ("fake_runner:FAKE", "fake_runner has no function FAKE"),  # a name, not a function
    ],
)
def test_a_name_that_names_no_runner_is_one_line(name: str, words: str) -> None:
    with pytest.raises(FleetError, match=f"no point runner {name!r}") as raised:
        runner(name)
    assert words in str(raised.value) and "\n" not in str(raised.value)


def test_the_environment_names_the_runner_of_a_whole_run(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv(RUNNER_ENV, raising=False)
    assert default_runner() == "linbench"
    monkeypatch.setenv(RUNNER_ENV, fake_runner.STALLING)
    assert default_runner() == fake_runner.STALLING
