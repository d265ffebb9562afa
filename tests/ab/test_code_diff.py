"""Which functions a change to a Python file touches, read from its syntax tree before and
after: small sources written for the test, and a real code object's first line. No device."""

from __future__ import annotations

import pytest

from linbench.ab.code_diff import WHOLE, CodeChange, code_change

BEFORE = '''"""A module."""
import math

LIMIT = 3


def helper(a, b=2):
    """Adds."""
    # one comment
    return a + b


@staticmethod
def decorated():
    def inner():
        return 1

    return inner


class Table:
    """A class."""

    size = 4

    def area(self):
        return self.size * self.size
'''


def _after(old: str, new: str) -> str:
    assert old in BEFORE
    return BEFORE.replace(old, new)


@pytest.mark.parametrize(
    ("old", "new"),
    [
        ("# one comment", "# another comment, longer"),
        ('"""Adds."""', '"""Adds them, a docstring changed."""'),
        ('"""A class."""', '"""Another."""'),
        ("return a + b", "return (a\n            + b)"),
        ('"""A module."""\n', ""),
    ],
)
def test_comments_docstrings_and_layout_are_no_change_of_code(old: str, new: str) -> None:
    assert code_change(BEFORE, _after(old, new)).none


def test_a_changed_body_names_its_function_and_the_line_its_code_object_starts_at() -> None:
    change = code_change(BEFORE, _after("return a + b", "return a * b"))
    assert change == CodeChange(whole=False, functions=frozenset({"helper"}), first_lines=frozenset({7}))


def test_a_nested_function_or_a_method_is_named_alone_and_a_decorated_one_starts_at_its_decorator() -> None:
    inner = code_change(BEFORE, _after("return 1", "return 2"))
    assert inner.functions == {"decorated.<locals>.inner"} and inner.first_lines == {15}
    outer = code_change(BEFORE, _after("    return inner\n", "    return inner if LIMIT else None\n"))
    assert outer.functions == {"decorated"} and outer.first_lines == {13}
    method = code_change(BEFORE, _after("return self.size * self.size", "return self.size**2"))
    assert method.functions == {"Table.area"} and not method.whole


def test_the_first_line_is_the_one_a_code_object_of_it_reports() -> None:
    """Tracing matches a changed function by its code object's co_firstlineno."""
    namespace: dict[str, object] = {}
    exec(compile(BEFORE, "before.py", "exec"), namespace)
    helper, decorated = namespace["helper"], namespace["decorated"]
    assert helper.__code__.co_firstlineno == 7  # type: ignore[attr-defined]
    assert decorated.__func__.__code__.co_firstlineno == 13  # type: ignore[attr-defined]


@pytest.mark.parametrize(
    ("old", "new"),
    [
        ("LIMIT = 3", "LIMIT = 4"),  # a value every user holds from import
        ("import math", "import math, os"),
        ("b=2", "b=3"),  # a default value, read when the module is imported
        ("size = 4", "size = 5"),  # a class body runs at import
        ("@staticmethod\n", "@classmethod\n"),
    ],
)
def test_a_change_to_what_runs_at_import_is_whole(old: str, new: str) -> None:
    assert code_change(BEFORE, _after(old, new)) == WHOLE


def test_an_added_helper_counts_by_its_callers_unless_its_definition_runs_code() -> None:
    calls = _after("return a + b", "return twice(a) + b") + "\n\ndef twice(x):\n    return 2 * x\n"
    change = code_change(BEFORE, calls)
    assert not change.whole and change.functions == {"helper", "twice"}
    assert code_change(BEFORE, BEFORE + "\n\n@register\ndef more():\n    pass\n") == WHOLE
    assert code_change(BEFORE, BEFORE + "\n\ndef more(x=make()):\n    pass\n") == WHOLE
    removed = code_change(BEFORE + "\n\ndef old():\n    return 1\n", BEFORE)
    assert removed.functions == {"old"} and removed.first_lines == frozenset()


@pytest.mark.parametrize(("before", "after"), [(BEFORE, None), (None, BEFORE), (BEFORE, "def broken(:\n")])
def test_a_file_added_removed_or_not_parsed_is_whole(before: str | None, after: str | None) -> None:
    assert code_change(before, after) == WHOLE
