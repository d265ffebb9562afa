"""What ``import linbench`` offers: every public name, listed by dir(), loaded only when used (CPU)."""

from __future__ import annotations

import subprocess
import sys

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
