"""``linbench build``: compile linbench's own kernels (csrc/) now, rather than on first use.

The first ``run``, ``check`` or test that needs a ``kernel`` impl builds csrc/ by itself
(linbench/kernels/build.py); this command does it on purpose and says where the build went,
how long it took, and, when it fails, the compiler's reason. A failure remembered from an
earlier build is tried again.
"""

from __future__ import annotations

import time

import typer

from linbench.cli.errors import exit_usage_error


def build_command() -> None:
    """Build the csrc/ kernels (the `kernel` impls) now; say where, how long, or why it failed."""
    from linbench.kernels import build

    if not build.CSRC.is_dir():
        typer.echo(f"linbench build: no csrc/ sources at {build.CSRC} (install linbench from a checkout)", err=True)
        raise typer.Exit(1)
    cuda_missing = build.cuda_toolchain_missing()
    flavours = {True: "CPU and CUDA", False: "CPU"}
    if cuda_missing is not None:
        del flavours[True]
    try:
        for with_cuda in flavours:  # a build asked for on purpose tries a remembered failure again
            (build.cache_root() / build.build_key(with_cuda) / "build-failed.txt").unlink(missing_ok=True)
    except OSError as exc:  # LINBENCH_KERNEL_CACHE naming a file, a folder that cannot be written
        exit_usage_error(f"the kernel cache {str(build.cache_root())!r} cannot be used: {exc.strerror or exc}")
    cached = build.is_built()
    start = time.perf_counter()
    result = build.load_kernels()
    seconds = time.perf_counter() - start
    if result.cpu_error is not None:
        typer.echo(f"linbench build: the kernels failed to build after {seconds:.1f} s: {result.cpu_error}", err=True)
        raise typer.Exit(1)
    with_cuda = cuda_missing is None and result.cuda_error is None
    directory = build.cache_root() / build.build_key(with_cuda)
    done = f"already built, loaded in {seconds:.1f} s" if cached else f"built in {seconds:.1f} s"
    typer.echo(f"linbench build: the {flavours[with_cuda]} kernels are {done}: {directory}")
    if cuda_missing is not None:
        typer.echo(f"  no CUDA kernels: {cuda_missing}")
    elif result.cuda_error is not None:
        typer.echo(f"linbench build: the CUDA kernels failed to build: {result.cuda_error}", err=True)
        raise typer.Exit(1)
