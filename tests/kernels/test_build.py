"""Building csrc/: cached by content, and a failed build reported as a reason, never raised."""

from __future__ import annotations

import shutil
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from typer.testing import CliRunner

from linbench.cli import app
from linbench.kernels import build

GCC_LOG = """\
[1/3] c++ -MMD -MF op_checks.o.d ...
FAILED: op_checks.o
/src/csrc/op_checks.cpp:7:3: error: 'oops' was not declared in this scope
    7 |   oops;
ninja: build stopped: subcommand failed.
"""


def test_first_error_line_picks_the_compiler_error() -> None:
    assert (
        build.first_error_line(GCC_LOG) == "/src/csrc/op_checks.cpp:7:3: error: 'oops' was not declared in this scope"
    )


def test_first_error_line_falls_back_to_the_last_line() -> None:
    assert build.first_error_line("linking\nld: cannot find -lfoo\n") == "ld: cannot find -lfoo"


def test_build_key_changes_with_the_sources(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    copy = tmp_path / "csrc"
    shutil.copytree(build.CSRC, copy)
    monkeypatch.setattr(build, "CSRC", copy)
    before = build.build_key(with_cuda=False)
    assert build.build_key(with_cuda=False) == before
    assert build.build_key(with_cuda=True) != before
    cuda_key = build.build_key(with_cuda=True)
    with next((copy / "cuda").glob("*.cu")).open("a") as source:
        source.write("// a change\n")
    assert build.build_key(with_cuda=False) == before  # the CPU build does not compile .cu files
    assert build.build_key(with_cuda=True) != cuda_key
    with (copy / "op_checks.cpp").open("a") as source:
        source.write("// a change\n")
    assert build.build_key(with_cuda=False) != before


@pytest.fixture
def broken_csrc(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Iterator[Path]:
    """A csrc/ whose sources fail to compile at once (no torch headers to parse first), built
    into an empty cache; the real build is restored after. The CPU flavour alone, wherever
    the tests run: with nvcc at hand load_kernels would first try CUDA on these sources."""
    copy = tmp_path / "csrc"
    copy.mkdir()
    for name in ("bindings.cpp", "op_checks.cpp"):
        (copy / name).write_text("static int broken = not_declared_anywhere;\n")
    monkeypatch.setattr(build, "CSRC", copy)
    monkeypatch.setattr(build, "cuda_toolchain_missing", lambda: "not built in this test")
    monkeypatch.setenv(build.CACHE_ENV, str(tmp_path / "cache"))
    build.load_kernels.cache_clear()
    yield copy
    build.load_kernels.cache_clear()


def test_a_failed_build_is_a_reason_and_is_remembered(broken_csrc: Path, capfd: pytest.CaptureFixture[str]) -> None:
    result = build.load_kernels()
    assert result.cpu_error is not None
    assert "kernel build failed" in result.cpu_error
    assert "not_declared_anywhere" in result.cpu_error
    assert "compiling the csrc" in capfd.readouterr().err  # the user was told a build was running
    build.load_kernels.cache_clear()
    assert build.load_kernels().cpu_error == result.cpu_error  # read back, not compiled again
    assert "compiling the csrc" not in capfd.readouterr().err


def test_list_reports_the_kernel_unavailable_with_the_compiler_reason(broken_csrc: Path) -> None:
    build.load_kernels()  # a build that failed (list itself never builds)
    result = CliRunner().invoke(app, ["list", "--device", "cpu"])
    assert result.exit_code == 0, result.output
    assert "kernel build failed" in result.output
    assert "Traceback" not in result.output


def test_the_built_kernel_runs_on_cpu_and_says_why_not_on_other_devices() -> None:
    result = build.load_kernels()
    assert result.reason("cpu") is None
    assert "no mps kernel" in result.reason("mps")


def test_processes_starting_together_build_once_under_the_lock(
    broken_csrc: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Four threads (each its own open file, as four agent processes are) reach an empty cache at
    once: one builds, the others wait on the lock and load its library. The stand-in build does
    not return before every thread has tried the lock, whatever the machine's load: without the
    lock, every thread would find no library and build (and with no lock taken at all, the
    stand-in waits in vain and fails the build)."""
    import fcntl
    import threading

    from torch.utils import cpp_extension

    tries = threading.Condition()
    tried: list[int] = []
    flock = fcntl.flock

    def counted_flock(handle: Any, operation: int) -> None:
        if operation & fcntl.LOCK_NB:
            with tries:
                tried.append(operation)
                tries.notify_all()
        flock(handle, operation)

    builds: list[str] = []

    def fake_build(name: str, build_directory: str, **_: object) -> None:
        builds.append(name)
        with tries:
            if not tries.wait_for(lambda: len(tried) == 4, timeout=60):
                raise RuntimeError("the other threads never tried the build lock")
        (Path(build_directory) / f"{name}.so").write_bytes(b"not ELF: needs no libstdc++ check")

    monkeypatch.setattr(build.fcntl, "flock", counted_flock)
    monkeypatch.setattr(cpp_extension, "load", fake_build)
    monkeypatch.setattr("torch.ops.load_library", lambda path: None)
    results: list[str | None] = []
    threads = [threading.Thread(target=lambda: results.append(build._compile_and_load(False))) for _ in range(4)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    assert results == [None] * 4 and len(builds) == 1


def test_the_compile_check_compiles_with_the_build_s_cuda_flags() -> None:
    """csrc/compile_check.sh's nvcc line (whose ptxas report csrc/cuda/README.md carries) has every
    flag the extension's CUDA build uses: --use_fast_math moves registers and spills. Reads files;
    no device, no compiler."""
    script = (Path(build.__file__).parents[2] / "csrc" / "compile_check.sh").read_text()
    nvcc_line = next(line for line in script.splitlines() if "nvcc -c" in line)
    assert all(flag in nvcc_line.split() for flag in build.CUDA_FLAGS), (nvcc_line, build.CUDA_FLAGS)
