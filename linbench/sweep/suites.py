"""Suite files: where a suite named without a path is found, and how its TOML is read.

A suite holds the top-level settings of a sweep and its ``[[sweep]]`` tables (linbench/sweep/spec.py
merges them with the defaults and the request); ``command`` says which command it is for.
"""

from __future__ import annotations

import sys
from collections.abc import Iterable, Mapping
from pathlib import Path
from typing import Any

from linbench.sweep.settings import COMMANDS, RENAMED_KEYS, SUITE_KEYS, TABLE_KEYS, TOP_KEYS
from linbench.sweep.values import SpecError

if sys.version_info >= (3, 11):
    import tomllib
else:  # pragma: no cover - Python 3.10
    import tomli as tomllib


# Where a suite named without a path (``--suite ci-cpu``) is looked for: ./suites, then the
# suites of the checkout linbench runs from. ``linbench suites`` lists the same folders.
CHECKOUT_SUITES = Path(__file__).resolve().parents[2] / "suites"
SUITE_DIRS = (Path("suites"), CHECKOUT_SUITES)


def find_suite(path: Path) -> Path:
    """The suite file ``path`` names: the file itself, or, for a bare name such as ``ci-cpu``
    (as ``linbench suites`` lists it), ``NAME.toml`` in ./suites or linbench's own suites/.
    SpecError naming the known suites when there is none."""
    if path.is_file() or len(path.parts) != 1:
        return path
    name = path.name if path.suffix == ".toml" else f"{path.name}.toml"
    for folder in SUITE_DIRS:
        if (folder / name).is_file():
            return folder / name
    known = sorted({p.stem for folder in SUITE_DIRS if folder.is_dir() for p in folder.glob("*.toml")})
    listed = f"; suites: {', '.join(known)}" if known else ""
    raise SpecError(f"suite file {str(path)!r} does not exist and names no suite of linbench suites{listed}")


def suite_command(path: Path, data: Mapping[str, Any]) -> str:
    """The command a suite is for (``command = "decode"``; "run" when it does not say)."""
    command = data.get("command", "run")
    if command not in COMMANDS:
        raise SpecError(f"suite file {str(path)!r}: command {command!r} is not one of {', '.join(COMMANDS)}")
    return str(command)


def read_suite(path: Path) -> dict[str, Any]:
    """A suite file's TOML as a dict; SpecError naming the file when it is missing or malformed."""
    if not path.is_file():
        what = "is a folder, not a TOML file" if path.is_dir() else "does not exist"
        raise SpecError(f"suite file {str(path)!r} {what}")
    try:
        return tomllib.loads(path.read_text())
    except (tomllib.TOMLDecodeError, UnicodeDecodeError) as exc:
        raise SpecError(f"suite file {str(path)!r} is not valid TOML: {exc}") from None


def load_suite(path: Path, command: str = "run") -> tuple[dict[str, Any], list[dict[str, Any]]]:
    """The top-level settings and the ``[[sweep]]`` tables of a suite file for ``command``."""
    data = read_suite(path)
    written_for = suite_command(path, data)
    if written_for != command:
        raise SpecError(
            f"suite file {str(path)!r} is a {written_for} suite; run it with linbench {written_for} --suite {path}"
        )
    data.pop("command", None)
    tables = data.pop("sweep", [])
    if not isinstance(tables, list) or not all(isinstance(t, dict) for t in tables):
        raise SpecError(f"suite file {str(path)!r}: 'sweep' must be an array of tables ([[sweep]])")
    _check_renamed(path, data)
    _check_keys(path, data, (*TOP_KEYS[command], *SUITE_KEYS))
    if data.get("no_against") is True and "against" in data:
        raise SpecError(f"suite file {str(path)!r}: against and no_against = true contradict each other; keep one")
    for table in tables:
        _check_keys(path, table, TABLE_KEYS[command])
    # Plugin paths in a suite are relative to the suite file, not to where linbench runs.
    plugins = _names(path, data, "plugin", "a path or a list of paths")
    data["plugin"] = [str((path.parent / p).resolve()) for p in plugins]
    if "controls" in data:  # a string was dropped by compare, a bad name failed every compare after
        controls = _names(path, data, "controls", 'a list of VARIANT:IMPL (controls = ["softmax:sdpa"])')
        bad = [name for name in controls if len(name.split(":")) != 2 or not all(name.split(":"))]
        if bad or isinstance(data["controls"], str):
            raise SpecError(
                f"suite file {str(path)!r}: controls must be a list of VARIANT:IMPL "
                f'(controls = ["softmax:sdpa"]); got {data["controls"]!r}'
            )
    return data, tables


def _names(path: Path, data: Mapping[str, Any], key: str, wanted: str) -> list[str]:
    """A key that holds a name or a list of names, as a list; SpecError for anything else."""
    value = data.get(key, [])
    values = [value] if isinstance(value, str) else value
    if not isinstance(values, list) or not all(isinstance(v, str) and v for v in values):
        raise SpecError(f"suite file {str(path)!r}: {key} must be {wanted}; got {value!r}")
    return values


def _check_renamed(path: Path, table: Mapping[str, Any]) -> None:
    """A key renamed since (``baseline``, now ``against``) is refused naming its new name: a
    silent alias would keep two spellings alive, and "baseline" is ab's git revision."""
    for old, new in RENAMED_KEYS.items():
        if old in table:
            raise SpecError(
                f"suite file {str(path)!r}: key {old!r} is now {new!r} (the impls measured beside the variants)"
            )


def _check_keys(path: Path, table: Mapping[str, Any], allowed: Iterable[str]) -> None:
    unknown = sorted(set(table) - set(allowed))
    if unknown:
        raise SpecError(f"suite file {str(path)!r}: unknown key(s) {', '.join(unknown)}; keys: {', '.join(allowed)}")
