"""Fixtures for the CLI tests: an in-process runner and a planted variant with a wrong impl."""

from __future__ import annotations

from collections.abc import Iterator

import pytest
from cli_helpers import PLANTED, Invoke, planted_variant
from typer.testing import CliRunner

from linbench.cli import app
from linbench.variants.registry import register_variant, unregister_variant


@pytest.fixture
def invoke() -> Invoke:
    """Run the app in this process (so planted variants are seen); stderr kept apart."""
    runner = CliRunner()
    return lambda *args: runner.invoke(app, [str(arg) for arg in args])


@pytest.fixture
def planted() -> Iterator[str]:
    """Register the planted variant for one test, and remove it after."""
    register_variant(planted_variant())
    yield PLANTED
    unregister_variant(PLANTED)
