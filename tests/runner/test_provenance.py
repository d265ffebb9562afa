"""meta.json's record of the optional libraries a run's impls declare (device: cpu)."""

from __future__ import annotations

import os

import pytest

from linbench.runner import provenance
from linbench.variants.feature_forms import fla


def test_fla_core_version_is_recorded_where_installed(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(provenance, "installed_version", lambda name: "0.6.0" if name == "fla-core" else None)
    monkeypatch.delenv("FLA_DISABLE_BACKEND_DISPATCH", raising=False)
    recorded = provenance.optional_library_versions()
    assert recorded["fla_core"] == "0.6.0"
    assert recorded["fla_backend_dispatch"].startswith("off")


def test_a_dispatch_the_user_turned_on_is_recorded_as_on(monkeypatch: pytest.MonkeyPatch) -> None:
    # fla-core 0.6 routes chunk_gated_delta_rule to FlashQLA where installed: a run made with
    # the dispatch on must say so, since its `fla` numbers may be another library's.
    monkeypatch.setattr(provenance, "installed_version", lambda name: "0.6.0" if name == "fla-core" else None)
    monkeypatch.setenv("FLA_DISABLE_BACKEND_DISPATCH", "0")
    assert provenance.optional_library_versions()["fla_backend_dispatch"].startswith("on")


def test_fla_is_imported_with_its_dispatch_pinned_off(monkeypatch: pytest.MonkeyPatch) -> None:
    imported = {}
    monkeypatch.setattr(os, "environ", {})  # restored after the test: pinning writes to it
    monkeypatch.setattr(fla.importlib, "import_module", lambda name: imported.setdefault(name, dict(os.environ)))
    fla.import_fla("fla.ops.linear_attn")
    seen = imported["fla.ops.linear_attn"]
    assert seen["FLA_DISABLE_BACKEND_DISPATCH"] == "1" and seen["FLA_FLASH_KDA"] == "0"
    # and fla's on-disk autotune cache, which keys a choice without the length, off
    assert seen["FLA_CACHE_RESULTS"] == "0"


def test_a_users_own_dispatch_setting_is_kept(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("FLA_DISABLE_BACKEND_DISPATCH", "0")
    fla.pin_fla_dispatch()
    assert os.environ["FLA_DISABLE_BACKEND_DISPATCH"] == "0"


def test_nothing_is_recorded_without_fla(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(provenance, "installed_version", lambda name: None)
    assert provenance.optional_library_versions() == {}
