"""scripts/gpu/truth.sh's budget: the limits the script runs by, the table in its header and the
one in docs/gpu.md agree, and fit one device call of 480 s (no device: reads files)."""

from __future__ import annotations

import re
from pathlib import Path

ROOT = Path(__file__).parents[1]
SCRIPT = (ROOT / "scripts" / "gpu" / "truth.sh").read_text()
DOC = (ROOT / "docs" / "gpu.md").read_text()
CALL_S = 480  # the device call's timeout_s that docs/gpu.md gives


def _script_limits() -> dict[str, int]:
    declared = re.search(r"declare -A LIMIT=\(([^)]*)\)", SCRIPT)
    assert declared is not None
    return {part: int(seconds) for part, seconds in re.findall(r"\[(\w+)\]=(\d+)", declared.group(1))}


def _table(pattern: str, text: str) -> dict[str, str]:
    return dict(re.findall(pattern, text, re.MULTILINE))


def test_the_three_budgets_agree() -> None:
    limits = _script_limits()
    header = _table(r"^#   (\w+) +\([a-f]\) +(\d+|rest) ", SCRIPT)
    doc = _table(r"^\| (\w+) \([a-f]\) \| (\d+|what remains) \|", DOC)
    timed = {part: str(seconds) for part, seconds in limits.items() if part != "gate"}  # the gate: what remains
    assert {part: s for part, s in header.items() if part != "gate"} == timed
    assert {part: s for part, s in doc.items() if part != "gate"} == timed
    assert header["gate"] == "rest" and doc["gate"] == "what remains"
    order = re.search(r"^PARTS=\(([^)]*)\)", SCRIPT, re.MULTILINE)
    assert order is not None and list(header) == ["setup", *order.group(1).split()]  # the table in run order


def test_the_limits_fit_the_deadline_and_the_deadline_fits_the_call() -> None:
    total = sum(seconds for part, seconds in _script_limits().items() if part != "gate")
    deadline = re.search(r"TRUTH_DEADLINE_S:-(\d+)", SCRIPT)
    assert deadline is not None
    assert total <= int(deadline.group(1)) <= CALL_S - 10
    assert re.search(rf"^#\s+{total}\s+of the {deadline.group(1)}", SCRIPT, re.MULTILINE)
    assert f"The limits add up to {total} s; the script's deadline is {deadline.group(1)} s" in DOC
    assert f"`timeout_s` {CALL_S}" in DOC
