"""Bad arguments raise a RuntimeError with their full message, in every build of csrc/.

Each check calls the op in a fresh process: a library whose TORCH_CHECK messages cannot be
formatted kills its process (SIGSEGV) instead of raising, which would take pytest down with it.
That happened with a private copy of libstdc++ linked into the library (a g++ whose library
directory holds only libstdc++.a): GCC 13's copy segfaulted on the first number in a message,
GCC 12's dropped the number.
"""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest
import torch

from linbench.kernels import build

REPO = Path(build.__file__).resolve().parents[2]
BUILD_FAILED = 3  # the child's exit status when its flavour did not build (a reason, not a crash)

# Loads one flavour of the library (argv[1]: "cpu" or "cuda") and prints one line per refused
# call, "<device> | <first line of the RuntimeError>". CPU tensors always; CUDA tensors too
# when the CUDA flavour is loaded and a GPU is visible.
CHILD = r"""
import sys
import torch
from linbench.kernels import build

flavour = sys.argv[1]
error = build._compile_and_load(with_cuda=flavour == "cuda")
if error is not None:
    print(error)
    sys.exit(3)
op = torch.ops.linbench.linear_attention_forward


def refused(device, *args):
    try:
        op(*args)
    except RuntimeError as exc:
        print(device, "|", str(exc).splitlines()[0], flush=True)
    else:
        print(device, "| no error", flush=True)


def cases(device, dtype):
    q, k = (torch.rand(2, 2, 70, 8, dtype=dtype, device=device) for _ in range(2))
    v = torch.rand(2, 2, 70, 5, dtype=dtype, device=device)
    refused(device, q, k, v, None, True, False, 0.0, 64, 7)
    refused(device, q[..., :5, :], k, v, None, True, False, 0.0, 64)
    refused(device, q, k, v.half(), None, True, False, 0.0, 64)
    refused(device, q, k, v, torch.ones(2, 2, 9, 5, device=device), True, False, 0.0, 64)
    refused(device, q, k, v, None, True, True, 1e-6, 64, 1, 0.5)
    return q, k, v


cases("cpu", torch.float64)
if flavour == "cuda" and torch.cuda.is_available():
    q, k, v = cases("cuda", torch.float32)
    refused("cuda", q, k, v, None, True, False, 0.0, 32)
"""

MESSAGES = [
    "linear_attention: feature_map must be 0 (none), 1 (L2 rows) or 2 (elu + 1); got 7",
    "linear_attention: q and k must have one shape; got [2, 2, 5, 8] and [2, 2, 70, 8]",
    "linear_attention: q, k, v must share one dtype",
    "linear_attention: decay must have shape (B, H, ceil(S / chunk), Dv) = (2, 2, 2, 5); got [2, 2, 9, 5]",
    "linear_attention: v_scale needs normalize=False; got 0.5",
]
CUDA_CHUNK_MESSAGE = "linear_attention on CUDA runs chunks of 64 tokens; got 32"

# A $CXX that links through the library directory given (-B: the compiler's own files, libraries
# among them) and serves a compile step (-c SOURCE -o OBJECT -MF DEPFILE) with the object of that
# name already in {built}, where there is one: ninja's depfile then names the source alone.
REUSING_COMPILER = """#!/bin/sh
out=""; depfile=""; source=""; compiling=""; previous=""
for argument in "$@"; do
    case "$previous" in -o) out=$argument ;; -MF) depfile=$argument ;; -c) source=$argument ;; esac
    [ "$argument" = -c ] && compiling=1
    previous=$argument
done
if [ -n "$compiling" ] && [ -f "{built}/${{out##*/}}" ]; then
    cp "{built}/${{out##*/}}" "$out" && printf '%s: %s\\n' "$out" "$source" >"$depfile" && exit 0
fi
exec "{compiler}" -B{libraries}/ "$@"
"""


def _refusals_in_a_fresh_process(
    flavour: str, env: dict[str, str] | None = None, must_build: bool = False
) -> list[str]:
    """The child's lines; a failure when it crashes, and a skip when the flavour does not build
    here (a failure too with must_build)."""
    env = dict(os.environ if env is None else env)
    env["PYTHONPATH"] = os.pathsep.join(filter(None, [str(REPO), env.get("PYTHONPATH")]))
    child = subprocess.run(
        [sys.executable, "-c", CHILD, flavour], capture_output=True, text=True, env=env, timeout=1800, check=False
    )
    if child.returncode == BUILD_FAILED and not must_build:
        pytest.skip(f"the {flavour} build of csrc/ is not available here: {child.stdout.strip()}")
    assert child.returncode == 0, (
        f"the {flavour} build's process ended with exit status {child.returncode} (negative: killed by that "
        f"signal instead of raising; {BUILD_FAILED}: the build failed):\n"
        f"{child.stdout}\n{child.stderr[-3000:]}"
    )
    return child.stdout.splitlines()


def _expected(flavour: str) -> list[str]:
    lines = [f"cpu | {message}" for message in MESSAGES]
    if flavour == "cuda" and torch.cuda.is_available():
        lines += [f"cuda | {message}" for message in MESSAGES] + [f"cuda | {CUDA_CHUNK_MESSAGE}"]
    return lines


@pytest.mark.parametrize("flavour", ["cpu", "cuda"], ids=["cpu-build", "cuda-build"])
def test_bad_arguments_raise_with_their_message(flavour: str) -> None:
    """The CPU-only build, and the build with the CUDA kernels in (what a machine with CUDA torch
    and nvcc loads): refused on CPU tensors, and on CUDA tensors where a GPU is visible. The
    CUDA build is skipped where torch has no CUDA or nvcc is missing."""
    if flavour == "cuda" and (missing := build.cuda_toolchain_missing()) is not None:
        pytest.skip(f"the CUDA build of csrc/ is not made here: {missing}")
    assert _refusals_in_a_fresh_process(flavour) == _expected(flavour)


def _loaded_library() -> Path:
    with_cuda = build.cuda_toolchain_missing() is None and build.load_kernels().cuda_error is None
    key = build.build_key(with_cuda)
    return build.cache_root() / key / f"linbench_kernels_{key}.so"


@pytest.mark.skipif(not sys.platform.startswith("linux"), reason="reads an ELF library's dependencies (Linux)")
def test_the_library_uses_the_shared_libstdcxx() -> None:
    """The library needs libstdc++.so.6, the copy torch uses, and carries none of its own."""
    if build.load_kernels().cpu_error is not None:
        pytest.skip(f"no built library: {build.load_kernels().cpu_error}")
    assert "libstdc++.so.6" in (build.needed_libraries(_loaded_library()) or [])


@pytest.mark.slow
@pytest.mark.skipif(not sys.platform.startswith("linux"), reason="needs a GNU toolchain (Linux)")
def test_a_compiler_whose_libraries_hold_only_a_static_libstdcxx_still_builds_a_raising_op(tmp_path: Path) -> None:
    """$CXX a g++ whose own library directory holds libstdc++.a and a dangling libstdc++.so
    symlink, like the GPU image's relocated GCC in /opt/gcc: -lstdc++ would take the archive there.
    The CPU build still needs the shared libstdc++ and its op still raises with its numbers.

    The bug is in the link: the library directory is searched only there. So the wrapper hands
    each compile step the object the real compiler already made for this build key (the same
    sources and flags; linbench's own build in this process's cache) and links for real through
    the library directory: a second compile of csrc/ took 27 s alone and 53 s on a busy CI. Where
    that build is absent (a CUDA machine builds the CUDA flavour), it compiles too."""
    compiler = shutil.which(os.environ.get("CXX", "c++"))
    if compiler is None:
        pytest.skip("no C++ compiler")
    archive = subprocess.run(
        [compiler, "-print-file-name=libstdc++.a"], capture_output=True, text=True, check=False
    ).stdout.strip()
    if not os.path.isabs(archive):
        pytest.skip(f"{compiler} has no static libstdc++ to link by mistake")
    libraries = tmp_path / "lib" / "gcc" / "x86_64-linux-gnu" / "13"
    libraries.mkdir(parents=True)
    (libraries / "libstdc++.a").symlink_to(archive)
    (libraries / "libstdc++.so").symlink_to("../../../x86_64-linux-gnu/libstdc++.so.6")  # dangling here
    build.load_kernels()  # this process's own build, whose objects the compile steps reuse
    built = build.cache_root() / build.build_key(with_cuda=False)
    wrapper = tmp_path / "g++"
    wrapper.write_text(REUSING_COMPILER.format(built=built, compiler=compiler, libraries=libraries))
    wrapper.chmod(0o755)
    env = {**os.environ, "CXX": str(wrapper), build.CACHE_ENV: str(tmp_path / "cache")}
    assert _refusals_in_a_fresh_process("cpu", env, must_build=True) == _expected("cpu")
