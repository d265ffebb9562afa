"""meta.json's record of the optional libraries a run's impls used."""

from __future__ import annotations

import pytest

from linbench.results import meta
from linbench.variants.linear_forms import fla


def test_fla_core_version_is_recorded_where_installed(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(fla, "fla_version", lambda: "0.6.0")
    assert meta.optional_library_versions() == {"fla_core": "0.6.0"}


def test_nothing_is_recorded_without_fla(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(fla, "fla_version", lambda: None)
    assert meta.optional_library_versions() == {}
