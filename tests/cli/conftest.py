"""Fixtures for the CLI tests: an in-process runner and a planted variant with a wrong impl."""

from __future__ import annotations

from collections.abc import Iterator

import pytest
from cli_helpers import PLANTED, Invoke, assert_device_stated, planted_variant
from typer.testing import CliRunner, Result

from linbench.cli import app
from linbench.variants.registry import register_variant, unregister_variant


@pytest.fixture
def invoke() -> Invoke:
    """Run the app in this process (so planted variants are seen); stderr kept apart.
    A run, decode, check or list must say its device (see assert_device_stated)."""
    runner = CliRunner()

    def run(*args: object) -> Result:
        assert_device_stated(args)
        return runner.invoke(app, [str(arg) for arg in args])

    return run


@pytest.fixture
def planted() -> Iterator[str]:
    """Register the planted variant for one test, and remove it after."""
    register_variant(planted_variant())
    yield PLANTED
    unregister_variant(PLANTED)
