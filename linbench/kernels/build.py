"""Compile csrc/ on first use with torch.utils.cpp_extension, cached between runs.

The build directory is keyed by everything that changes the binary (the sources, torch,
Python, the CPU's instruction set, whether CUDA is built in), so a stale library is never
loaded and an unchanged checkout never rebuilds. Building and loading hold a file lock in that
directory: processes starting together on one host (the agents of a run spread over several
GPUs, linbench/fleet/) build once, the others wait and load, and none loads a library the
linker is still writing. A failed build is remembered next to it
with the compiler's first error line: `linbench list` then reports the impl unavailable
with that reason, without compiling again on every call.
"""

from __future__ import annotations

import contextlib
import fcntl
import functools
import hashlib
import os
import platform
import re
import shutil
import struct
import sys
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

CSRC = Path(__file__).resolve().parents[2] / "csrc"
CACHE_ENV = "LINBENCH_KERNEL_CACHE"
LOCK_FILE = "build.lock"
# -O3 and the host's vector ISA: the tile products (csrc/cpu/tile_gemm.h) are written for the
# compiler to vectorise; fp-contract lets it fuse the multiply-adds. OpenMP runs
# at::parallel_for over batch x heads on torch's intra-op threads.
CPU_FLAGS = ("-O3", "-march=native", "-ffp-contract=fast", "-fopenmp")
CUDA_FLAGS = ("-O3", "--use_fast_math", "-std=c++17")
# libstdc++ is linked by its file name, libstdc++.so.6: the shared library torch's own libraries
# use. A plain -lstdc++ takes the first libstdc++ in the compiler's search path, and that can be
# a static archive: the GPU image's $CXX, /opt/gcc/bin/g++ (Ubuntu's GCC 13, relocated), finds
# libstdc++.a in its own lib/gcc/x86_64-linux-gnu/13/, where the libstdc++.so symlink dangles (a
# g++ run with -static-libstdc++ does the same). The library then carries a private copy of
# libstdc++ next to the process's, and its streams break: formatting a number into a
# TORCH_CHECK message segfaults (GCC 13's copy; GCC 12's drops the number), so bad arguments
# kill the process instead of raising. They are part of the cache key: older builds are redone.
LINK_FLAGS = ("-fopenmp", "-l:libstdc++.so.6")


@dataclass(frozen=True)
class BuildResult:
    """What loading the kernels gave: which backends are registered, or why not."""

    cpu_error: str | None
    cuda_error: str | None  # None also when CUDA was built and loaded fine

    def reason(self, device_type: str) -> str | None:
        """Why the op cannot run on ``device_type``, or None when it can."""
        if device_type == "cpu":
            return self.cpu_error
        if device_type == "cuda":
            return self.cpu_error or self.cuda_error
        return f"no {device_type} kernel in csrc/ (CPU and CUDA only)"


def cpu_sources() -> list[Path]:
    return [CSRC / "bindings.cpp", CSRC / "op_checks.cpp", *sorted((CSRC / "cpu").glob("*.cpp"))]


def cuda_sources() -> list[Path]:
    return [CSRC / "cuda_ops.cpp", *sorted((CSRC / "cuda").glob("*.cu"))]


def key_sources(with_cuda: bool) -> list[Path]:
    """Every file that goes into one flavour's build: its cache key's input. A CPU build
    leaves out csrc/cuda/, so editing a .cu file does not rebuild it."""
    headers = sorted(CSRC.glob("*.h")) + sorted((CSRC / "cpu").glob("*.h"))
    if with_cuda:
        headers += sorted((CSRC / "cuda").rglob("*.cuh")) + sorted((CSRC / "cuda").rglob("*.h"))
    sources = cpu_sources() + (cuda_sources() if with_cuda else [])
    return [path for path in sources + headers if path.is_file()]


def cuda_toolchain_missing() -> str | None:
    """Why the CUDA half is not built here, or None when torch has CUDA and nvcc exists."""
    import torch

    if torch.version.cuda is None:
        return "this torch build has no CUDA"
    # Where torch.utils.cpp_extension looks for CUDA, without importing it: that import took 0.5-0.6 s
    # with a CUDA build of torch (0.2-0.3 s without), in every worker process that loads the kernels.
    if os.environ.get("CUDA_HOME") or os.environ.get("CUDA_PATH") or shutil.which("nvcc"):
        return None
    if Path("/usr/local/cuda").is_dir():
        return None
    return "nvcc not found (set CUDA_HOME)"


def _cpu_signature() -> str:
    """The instruction-set flags -march=native compiles for, so a cache copied to another
    machine is rebuilt instead of dying on an illegal instruction."""
    from linbench.machine.facts import cpuinfo_field  # facts imports torch: only when a build asks

    flags = cpuinfo_field("flags")
    return f"flags: {flags}" if flags is not None else platform.processor() or platform.machine()


def build_key(with_cuda: bool) -> str:
    import torch

    digest = hashlib.sha256()
    for path in key_sources(with_cuda):
        digest.update(path.relative_to(CSRC).as_posix().encode())
        digest.update(path.read_bytes())
    parts = (torch.__version__, sys.version, _cpu_signature(), str(with_cuda), *CPU_FLAGS, *CUDA_FLAGS, *LINK_FLAGS)
    for part in parts:
        digest.update(part.encode())
    return digest.hexdigest()[:16]


def cache_root() -> Path:
    configured = os.environ.get(CACHE_ENV)
    if configured:
        return Path(configured)
    base = Path(os.environ.get("XDG_CACHE_HOME", Path.home() / ".cache"))
    return base / "linbench" / "kernels"


def first_error_line(log: str) -> str:
    """The compiler's first error, or the last non-empty line: one line for `linbench list`."""
    for line in log.splitlines():
        if re.search(r"\berror\b", line, re.IGNORECASE) and "Error building extension" not in line:
            return line.strip()[:300]
    lines = [line.strip() for line in log.splitlines() if line.strip()]
    return lines[-1][:300] if lines else "unknown build failure"


@contextlib.contextmanager
def build_lock(directory: Path) -> Iterator[None]:
    """Hold ``directory``'s build lock (an flock on build.lock) for the block; say so once when
    another process holds it (it is building: this one waits, then loads its library)."""
    directory.mkdir(parents=True, exist_ok=True)
    with (directory / LOCK_FILE).open("a") as handle:
        try:
            fcntl.flock(handle, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            print(f"linbench: waiting for another process building the kernels in {directory}…", file=sys.stderr)
            fcntl.flock(handle, fcntl.LOCK_EX)
        try:
            yield
        finally:
            fcntl.flock(handle, fcntl.LOCK_UN)


def _compile_and_load(with_cuda: bool) -> str | None:
    """Build (or reuse) and load one flavour under the build lock; the error line when it fails."""
    directory = cache_root() / build_key(with_cuda)
    try:  # the cache a file, read-only, full: the kernels are unavailable, saying why
        directory.mkdir(parents=True, exist_ok=True)
        (directory / LOCK_FILE).open("a").close()
    except OSError as exc:
        where = f" ({CACHE_ENV})" if os.environ.get(CACHE_ENV) else ""
        return f"the kernel cache {str(directory)!r}{where} cannot be used: {exc.strerror or exc}"
    with build_lock(directory):
        return _compile_and_load_locked(directory, with_cuda)


def _compile_and_load_locked(directory: Path, with_cuda: bool) -> str | None:
    failure = directory / "build-failed.txt"
    if failure.exists():
        return failure.read_text().strip()
    name = f"linbench_kernels_{directory.name}"
    library = directory / f"{name}.so"
    if library.exists():
        # The key already covers every input of the build, so a library under it is current:
        # load it directly instead of asking ninja (0.12 s per worker process, two per point).
        import torch

        torch.ops.load_library(str(library))
        return None
    what = "CPU and CUDA" if with_cuda else "CPU"
    print(f"linbench: compiling the csrc {what} kernels into {directory} (first use, about 25 s)…", file=sys.stderr)
    from torch.utils import cpp_extension  # 0.08 s to import: only when there is something to build

    sources = [str(p) for p in cpu_sources() + (cuda_sources() if with_cuda else [])]
    try:
        cpp_extension.load(
            name=name,
            sources=sources,
            extra_include_paths=[str(CSRC)],
            extra_cflags=[*CPU_FLAGS, *(["-DLINBENCH_WITH_CUDA"] if with_cuda else [])],
            extra_cuda_cflags=list(CUDA_FLAGS),
            extra_ldflags=list(LINK_FLAGS),
            build_directory=str(directory),
            is_python_module=False,
            verbose=False,
        )
    except Exception as exc:  # a compiler or loader failure of any kind makes the impl unavailable
        reason = f"kernel build failed: {first_error_line(str(exc))} (full log: {directory / 'build.log'})"
        (directory / "build.log").write_text(str(exc))
        failure.write_text(reason + "\n")
        return reason
    needed = needed_libraries(library)
    if needed is not None and "libstdc++.so.6" not in needed:
        # Loaded already, but never used: its first TORCH_CHECK would crash the process.
        reason = (
            f"kernel build failed: {library.name} carries its own copy of libstdc++ instead of needing "
            f"libstdc++.so.6 (the compiler {os.environ.get('CXX', 'c++')} links it statically), so its errors "
            "would crash the process"
        )
        failure.write_text(reason + "\n")
        return reason
    return None


def needed_libraries(library: Path) -> list[str] | None:
    """The shared libraries an ELF64 little-endian library needs (its DT_NEEDED entries); None
    when it is not such a file (macOS, say)."""
    data = library.read_bytes()
    if data[:6] != b"\x7fELF\x02\x01":
        return None
    (section_offset,) = struct.unpack_from("<Q", data, 0x28)
    entry_size, count = struct.unpack_from("<HH", data, 0x3A)
    # (type, offset, size, link) of each section header
    sections = [struct.unpack_from("<4xI16xQQI", data, section_offset + i * entry_size) for i in range(count)]
    for kind, offset, size, link in sections:
        if kind != 6:  # SHT_DYNAMIC; its sh_link is the string table its names are in
            continue
        strings = sections[link][1]
        needed = []
        for position in range(offset, offset + size, 16):
            tag, value = struct.unpack_from("<qQ", data, position)
            if tag == 0:  # DT_NULL
                break
            if tag == 1:  # DT_NEEDED
                start = strings + value
                needed.append(data[start : data.index(b"\0", start)].decode())
        return needed
    return []


@functools.cache
def load_kernels() -> BuildResult:
    """Build and load csrc/ once per process; CUDA too where the toolchain allows."""
    if not CSRC.is_dir():
        missing = f"csrc/ sources not found at {CSRC} (install linbench from a source checkout)"
        return BuildResult(missing, missing)
    cuda_missing = cuda_toolchain_missing()
    if cuda_missing is None:
        cuda_error = _compile_and_load(with_cuda=True)
        if cuda_error is None:
            return BuildResult(None, None)
        # The CPU kernel must not be lost to a CUDA build problem.
        return BuildResult(_compile_and_load(with_cuda=False), cuda_error)
    return BuildResult(_compile_and_load(with_cuda=False), f"CUDA kernels not built: {cuda_missing}")


def is_built() -> bool:
    """Whether load_kernels() would find csrc/ built, or a remembered build failure, without
    compiling: a read-only look at the cache, so that `linbench list` never builds."""
    if load_kernels.cache_info().currsize or not CSRC.is_dir():
        return True
    for with_cuda in (True, False) if cuda_toolchain_missing() is None else (False,):
        directory = cache_root() / build_key(with_cuda)
        if (directory / f"linbench_kernels_{directory.name}.so").exists():
            return True
        if not (directory / "build-failed.txt").exists():
            return False
    return True  # every flavour failed before: load_kernels reads the failure, builds nothing
