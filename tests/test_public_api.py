"""What ``import linbench`` offers: every public name, listed by dir(), loaded only when used (CPU)."""

from __future__ import annotations

import subprocess
import sys

import pytest

import linbench
from linbench.errors import ImplUnavailableError


def test_the_error_a_plugin_raises_is_importable_from_linbench() -> None:
    from linbench import ImplUnavailableError as Exported

    assert Exported is ImplUnavailableError


def test_dir_lists_every_public_name_and_each_resolves() -> None:
    listed = dir(linbench)
    for name in linbench.__all__:
        assert name in listed, name
        assert getattr(linbench, name) is not None
    assert "ImplUnavailableError" in linbench.__all__


def test_the_error_and_the_run_loader_come_without_torch() -> None:
    # A notebook that only reads runs (linbench.load_run) never pays for importing torch.
    code = (
        "import sys, linbench; linbench.ImplUnavailableError; linbench.load_run; dir(linbench); "
        "assert 'torch' not in sys.modules"
    )
    result = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=60, check=False)
    assert result.returncode == 0, result.stderr


def test_a_causal_that_is_no_bool_and_a_run_path_that_is_no_path_are_one_line() -> None:
    """causal="no" ran as causal; load_run(None) was pathlib's TypeError."""
    import torch

    q = torch.randn(1, 1, 8, 4)
    with pytest.raises(ValueError, match="causal must be True or False; got 'no'"):
        linbench.attention(q, q, q, variant="cosine", impl="chunked", causal="no")  # type: ignore[arg-type]
    with pytest.raises(ValueError, match="load_run takes a run folder"):
        linbench.load_run(None)  # type: ignore[arg-type]
    with pytest.raises(ValueError, match="a name or a list of names is wanted here; got 3"):
        linbench.SweepRequest(variants=3)  # type: ignore[arg-type]


def test_meta_tensors_are_one_line_not_torch_s_error() -> None:
    """attention(q.to('meta'), ...) was a RuntimeError from deep in torch (.item() on a meta tensor)."""
    import torch

    q = torch.randn(1, 1, 8, 4, device="meta")
    with pytest.raises(ValueError, match="q, k, v are meta tensors"):
        linbench.attention(q, q, q, variant="cosine")
