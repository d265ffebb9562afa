"""``linbench list`` never compiles csrc/ (it says the kernels are not built yet), and
``linbench build`` builds them on purpose: where, how long, or the compiler's reason."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest
from cli_helpers import Invoke

from linbench.kernels import build


@pytest.fixture
def empty_cache(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Iterator[Path]:
    """An empty kernel cache, and this process's record of a load forgotten (what a fresh
    process starts with), for one test; forgotten again after it."""
    cache = tmp_path / "cache"
    monkeypatch.setenv(build.CACHE_ENV, str(cache))
    build.load_kernels.cache_clear()
    yield cache
    build.load_kernels.cache_clear()


def test_list_says_not_built_yet_and_builds_nothing(invoke: Invoke, empty_cache: Path) -> None:
    result = invoke("list", "--device", "cpu")
    assert result.exit_code == 0, result.output
    kernel_rows = [line for line in result.stdout.splitlines() if "│ kernel " in line]
    assert len(kernel_rows) == 4
    assert all("not built yet (builds on first use, about 25 s" in row for row in kernel_rows)
    assert "compiling" not in result.stderr
    assert not empty_cache.exists() or not list(empty_cache.rglob("*.so"))
    assert build.load_kernels.cache_info().currsize == 0  # nothing was loaded either


def test_is_built_reads_the_cache_without_building(empty_cache: Path) -> None:
    assert not build.is_built()
    folder = empty_cache / build.build_key(False)
    folder.mkdir(parents=True)
    (folder / "build-failed.txt").write_text("kernel build failed: remembered\n")
    if build.cuda_toolchain_missing() is None:  # a CUDA flavour is looked for first: failed too
        (empty_cache / build.build_key(True)).mkdir()
        (empty_cache / build.build_key(True) / "build-failed.txt").write_text("kernel build failed: remembered\n")
    assert build.is_built()  # the failure is read back
    assert not list(empty_cache.rglob("*.so"))


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


@pytest.fixture
def cache_is_a_file(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Iterator[Path]:
    """LINBENCH_KERNEL_CACHE naming a file, and this process's load forgotten around the test."""
    taken = tmp_path / "a-file"
    taken.write_text("")
    monkeypatch.setenv(build.CACHE_ENV, str(taken))
    build.load_kernels.cache_clear()
    yield taken
    build.load_kernels.cache_clear()


def test_a_kernel_cache_that_is_a_file_is_one_line_for_build_and_a_reason_for_the_impls(
    invoke: Invoke, cache_is_a_file: Path
) -> None:
    """Defect: build ended in a NotADirectoryError traceback, and so did any run or check of a
    kernel impl (its availability builds)."""
    result = invoke("build")
    assert result.exit_code == 2 and "the kernel cache" in result.stderr and "Not a directory" in result.stderr
    assert "Traceback" not in result.output
    reason = build.load_kernels().cpu_error
    assert reason is not None and str(cache_is_a_file) in reason and "cannot be used: Not a directory" in reason
