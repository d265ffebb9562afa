"""Every test module whose fixture serves the whole module runs in one worker (SHARED_MODULES in
tests/shared_modules.py): spread over the workers, each worker would make the subject again. Before
this check the served-decode module's interpreted fla process (about 10 s of CPU) ran in each
of three workers."""

from __future__ import annotations

import re
from pathlib import Path

from shared_modules import SHARED_MODULES

TESTS = Path(__file__).parent
WIDE_FIXTURE = re.compile(r"@pytest\.fixture\(\s*scope=\"(module|package|session)\"")


def test_every_module_with_a_module_fixture_runs_in_one_worker() -> None:
    wide = {
        path.relative_to(TESTS.parent).as_posix()
        for path in TESTS.rglob("test_*.py")
        if WIDE_FIXTURE.search(path.read_text())
    }
    assert wide, "the pattern found no fixture at all: it no longer matches how fixtures are written"
    assert sorted(wide - set(SHARED_MODULES)) == []
