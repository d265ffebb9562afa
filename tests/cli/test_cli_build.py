"""``linbench list`` never compiles csrc/ (it says the kernels are not built yet), and
``linbench build`` builds them on purpose: where, how long, or the compiler's reason."""

from __future__ import annotations

import os
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest
from cli_helpers import Invoke

from linbench.kernels import build

IS_BUILT = "from linbench.kernels.build import is_built; print(is_built())"


def python(*args: str, cache: Path) -> subprocess.CompletedProcess[str]:
    env = os.environ | {build.CACHE_ENV: str(cache)}
    return subprocess.run([sys.executable, *args], capture_output=True, text=True, env=env, timeout=300, check=False)


def test_list_says_not_built_yet_and_builds_nothing(tmp_path: Path) -> None:
    cache = tmp_path / "cache"
    result = python("-m", "linbench", "list", "--device", "cpu", cache=cache)
    assert result.returncode == 0, result.stderr
    kernel_rows = [line for line in result.stdout.splitlines() if "│ kernel " in line]
    assert len(kernel_rows) == 4
    assert all("not built yet (builds on first use, about 25 s" in row for row in kernel_rows)
    assert "compiling" not in result.stderr
    assert not cache.exists() or not list(cache.rglob("*.so"))


def test_is_built_reads_the_cache_without_building(tmp_path: Path) -> None:
    cache = tmp_path / "cache"
    assert python("-c", IS_BUILT, cache=cache).stdout.strip() == "False"
    key = python("-c", "from linbench.kernels.build import build_key; print(build_key(False))", cache=cache)
    folder = cache / key.stdout.strip()
    folder.mkdir(parents=True)
    (folder / "build-failed.txt").write_text("kernel build failed: remembered\n")
    assert python("-c", IS_BUILT, cache=cache).stdout.strip() == "True"  # the failure is read back
    assert not list(cache.rglob("*.so"))


@pytest.fixture
def broken_csrc(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Iterator[Path]:
    """A csrc/ whose sources fail to compile at once, built into an empty cache."""
    copy = tmp_path / "csrc"
    copy.mkdir()
    for name in ("bindings.cpp", "op_checks.cpp"):
        (copy / name).write_text("static int broken = not_declared_anywhere;\n")
    monkeypatch.setattr(build, "CSRC", copy)
    monkeypatch.setenv(build.CACHE_ENV, str(tmp_path / "cache"))
    build.load_kernels.cache_clear()
    yield copy
    build.load_kernels.cache_clear()


def test_build_reports_the_compiler_s_reason_and_exits_1(invoke: Invoke, broken_csrc: Path) -> None:
    result = invoke("build")
    assert result.exit_code == 1, result.output
    assert "failed to build" in result.stderr and "not_declared_anywhere" in result.stderr
    assert "build.log" in result.stderr and "Traceback" not in result.output
    build.load_kernels.cache_clear()
    again = invoke("build")  # on purpose: the remembered failure is tried again, not read back
    assert "compiling the csrc" in again.stderr and again.exit_code == 1


def test_build_says_where_the_kernels_are(invoke: Invoke) -> None:
    result = invoke("build")
    assert result.exit_code == 0, result.output
    assert "kernels are" in result.stdout and ("built in" in result.stdout or "already built" in result.stdout)
    folder = Path(result.stdout.splitlines()[0].rsplit(": ", 1)[1])
    assert folder.is_dir() and folder.parent == build.cache_root()
