"""A baseline revision from before run's ``--baseline`` became ``--against``: its words.

``linbench ab`` hands both sides the same run flags and the current tree's suite file. A
revision from before the rename knows the impls measured beside the variants as
``--baseline``/``--no-baseline`` and a suite's ``baseline``/``no_baseline`` keys, and refuses the
new spellings. Such a side is given the old words: the flags renamed and the suite copied into
the A/B folder with its keys renamed, the same sweep spelt as that code reads it.
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from pathlib import Path

from linbench.ab.deadline import Deadline
from linbench.ab.rounds import help_of

# The new spelling -> the old, for flags and a suite's top-level keys.
OLD_FLAGS = {"--against": "--baseline", "--no-against": "--no-baseline"}
OLD_KEYS = {"against": "baseline", "no_against": "no_baseline"}
SUITE = "--suite"


def knows_against(tree: Path, env: dict[str, str], deadline: Deadline | None = None) -> bool:
    """Whether the baseline's code in ``tree`` takes ``run --against``: its help, asked once,
    names it (RoundError where it does not answer: rounds.help_of)."""
    found = help_of("baseline", tree, env, "run", deadline)
    return found.returncode != 0 or "--against" in found.stdout


def old_spelling(run_args: Sequence[str], out_dir: Path) -> list[str]:
    """``run_args`` as a revision from before the rename reads them: the flags renamed, and a
    ``--suite`` file copied into ``out_dir`` with its keys renamed."""
    words: list[str] = []
    suite_next = False
    for word in run_args:
        if suite_next:
            word = str(old_suite(Path(word), out_dir))
        suite_next = word == SUITE
        words.append(OLD_FLAGS.get(word, word))
    return words


def old_suite(suite: Path, out_dir: Path) -> Path:
    """A copy of ``suite`` in ``out_dir`` whose top-level ``against``/``no_against`` keys are
    spelt the old way (a suite's keys start their line; a table's axes never take these)."""
    text = suite.read_text()
    for new, old in OLD_KEYS.items():
        text = re.sub(rf"^(\s*){new}(\s*=)", rf"\g<1>{old}\g<2>", text, flags=re.MULTILINE)
    out_dir.mkdir(parents=True, exist_ok=True)
    copy = out_dir / f"baseline-{suite.name}"
    copy.write_text(text)
    return copy
