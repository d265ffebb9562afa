"""Fixtures for the runner tests."""

from __future__ import annotations

from collections.abc import Iterator

import pytest
from sweep_helpers import PLANTED

from linbench.variants.plugins import unload_plugin_file


@pytest.fixture(autouse=True)
def _unload_planted() -> Iterator[None]:
    """The planted variant must not leak into other tests' "every variant" runs."""
    yield
    unload_plugin_file(PLANTED)


@pytest.fixture
def short_grace(monkeypatch: pytest.MonkeyPatch) -> None:
    """Timeout tests wait one second past the limit, not the default grace."""
    monkeypatch.setattr("linbench.runner.supervisor.START_GRACE_S", 1.0)
