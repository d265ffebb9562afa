"""A baseline revision from before run's --baseline became --against gets the old words: the
flags renamed and the suite copied with its keys renamed; the current code keeps the new."""

from __future__ import annotations

import os
from pathlib import Path

from linbench.ab.rounds import side_env
from linbench.ab.spelling import knows_against, old_spelling
from linbench.sweep.suites import read_suite

ROOT = Path(__file__).parents[2]


def test_the_old_words_rename_the_flags_and_the_suite_s_keys(tmp_path: Path) -> None:
    suite = tmp_path / "gate.toml"
    keys = 'variant = ["cosine:chunked"]\nagainst = ["softmax:sdpa"]\nno_against = false\n'
    suite.write_text(keys + "[[sweep]]\nseq = 64\n")
    args = ["--suite", str(suite), "--against", "softmax:naive", "--no-against", "--seq", "64"]
    words = old_spelling(args, tmp_path / "ab")
    assert words[2:] == ["--baseline", "softmax:naive", "--no-baseline", "--seq", "64"]
    assert words[0] == "--suite" and Path(words[1]).parent == tmp_path / "ab"
    copied = read_suite(Path(words[1]))
    assert copied == {
        "variant": ["cosine:chunked"],
        "baseline": ["softmax:sdpa"],
        "no_baseline": False,
        "sweep": [{"seq": 64}],
    }
    assert "against" in suite.read_text()  # the current side's suite is left as it is


def test_the_current_code_knows_against_and_a_revision_whose_help_lacks_it_does_not(tmp_path: Path) -> None:
    assert knows_against(ROOT, side_env(ROOT))
    old = tmp_path / "old" / "linbench"
    old.mkdir(parents=True)
    (old / "__init__.py").write_text("")
    (old / "__main__.py").write_text("print('Usage: linbench run [OPTIONS]  --baseline TEXT  --no-baseline')\n")
    assert not knows_against(old.parent, side_env(old.parent) | {"PATH": os.environ.get("PATH", "")})
