"""meta.json's record of the optional libraries a run's impls declare (device: cpu)."""

from __future__ import annotations

import pytest

from linbench.runner import provenance
from linbench.variants.registry import optional_libraries


def test_the_fla_impls_declare_fla_core() -> None:
    assert "fla-core" in optional_libraries()


def test_fla_core_version_is_recorded_where_installed(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(provenance, "installed_version", lambda name: "0.6.0" if name == "fla-core" else None)
    assert provenance.optional_library_versions() == {"fla_core": "0.6.0"}


def test_nothing_is_recorded_without_fla(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(provenance, "installed_version", lambda name: None)
    assert provenance.optional_library_versions() == {}
