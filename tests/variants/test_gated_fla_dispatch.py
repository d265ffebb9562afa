"""``fla-dispatch``: gated-deltanet's and kda's chunk kernel as fla's dispatch runs it, and the
backend that answered named (CPU; fla's kernels and its registry of backends stood in).

fla's rule (fla.backends.BackendRegistry.dispatch): backends by priority; the first installed,
enabled one whose verifier accepts the call runs it; else fla's own Triton kernel.
"""

from __future__ import annotations

import os
from dataclasses import dataclass, field
from typing import Any

import pytest
import torch
from fla_stand_ins import Kernels

import linbench
from linbench.check.correctness import check_impl
from linbench.shape import Shape
from linbench.variants import backends
from linbench.variants.feature_forms import fla as fla_common
from linbench.variants.gated import fla as gated_fla
from linbench.variants.gated import fla_dispatch

SHAPE = Shape(1, 2, 20, 8, 8)


@dataclass
class Backend:
    """A stand-in of one of fla's backends; it runs the call on ``kernel`` when it takes it."""

    backend_type: str
    accepts: bool
    kernel: Any
    installed: bool = True
    seen_env: list[str | None] = field(default_factory=list)
    ran: int = 0

    def is_available(self) -> bool:
        return self.installed

    def is_enabled(self) -> bool:
        return True

    def verify(self, name: str, **kwargs: Any) -> tuple[bool, str | None]:
        self.seen_env.append(os.environ.get("FLA_FLASH_KDA"))
        return self.accepts, None if self.accepts else "not this one"

    def get_implementation(self, name: str) -> Any:
        def run(**kwargs: Any) -> Any:
            self.ran += 1
            return self.kernel(**kwargs)

        return run


@pytest.fixture
def fake(monkeypatch: pytest.MonkeyPatch) -> Kernels:
    kernels = Kernels()
    monkeypatch.setattr(gated_fla, "fla_kernel", kernels.lookup)
    monkeypatch.setattr(fla_common, "fla_unavailable", lambda *args: None)
    return kernels


def _registry(monkeypatch: pytest.MonkeyPatch, *stand_ins: Backend) -> None:
    monkeypatch.setattr(fla_dispatch, "fla_backends", lambda name: list(stand_ins))


def _check(name: str) -> None:
    case = check_impl(linbench.get_variant(name), "fla-dispatch", SHAPE, causal=True, dtype=torch.float32)
    assert case.ok, case.describe()


def test_with_no_backend_taking_it_fla_s_own_kernel_runs_and_says_so(
    fake: Kernels, monkeypatch: pytest.MonkeyPatch
) -> None:
    declining = Backend("flash_qla", accepts=False, kernel=fake.chunk_gated_delta_rule)
    _registry(monkeypatch, Backend("tilelang", True, None, installed=False), declining)
    _check("gated-deltanet")
    assert declining.seen_env and declining.ran == 0
    noted = backends.take_noted() or ""
    assert noted.startswith("fla dispatch: fla-triton chunk_gated_delta_rule (")
    assert "tilelang: not installed or disabled" in noted and "flash_qla: not this one" in noted


def test_the_first_backend_that_takes_the_call_answers_and_is_named(
    fake: Kernels, monkeypatch: pytest.MonkeyPatch
) -> None:
    taking = Backend("flash_kda", accepts=True, kernel=fake.chunk_kda)
    _registry(monkeypatch, taking)
    _check("kda")
    assert taking.ran > 0
    assert backends.take_noted() == "fla dispatch: flash_kda (chunk_kda)"


def test_the_switch_linbench_pinned_is_lifted_while_fla_chooses(fake: Kernels, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(fla_common, "_PINNED", {"FLA_FLASH_KDA", "FLA_DISABLE_BACKEND_DISPATCH"})
    monkeypatch.setenv("FLA_FLASH_KDA", "0")
    taking = Backend("flash_kda", accepts=True, kernel=fake.chunk_kda)
    _registry(monkeypatch, taking)
    q = torch.randn(1, 2, 8, 8)
    linbench.attention(q, q, q, variant="kda", impl="fla-dispatch", g=torch.zeros(1, 2, 8, 8), beta=torch.rand(1, 2, 8))
    assert set(taking.seen_env) == {None}
    assert os.environ["FLA_FLASH_KDA"] == "0"  # and put back after


def test_chunk_kda_reaches_fla_s_own_flash_kda_backend(fake: Kernels, monkeypatch: pytest.MonkeyPatch) -> None:
    """Defect: the impl read fla's *operation* registry 'kda' (TileLang, Ascend), while fla 0.6.0
    registers FlashKDA on chunk_kda's *function* registry (fla/ops/kda/backends/flash_kda.py
    ``@register(chunk_kda) class FlashKDABackend``): FlashKDA could never answer."""
    module = pytest.importorskip("fla.ops.kda.backends.flash_kda")
    backend = module.FlashKDABackend
    monkeypatch.setattr(backend, "is_available", classmethod(lambda cls: True))
    monkeypatch.setattr(backend, "is_enabled", lambda self: True)
    monkeypatch.setattr(backend, "chunk_kda_verifier", lambda self, **kwargs: (True, None))
    monkeypatch.setattr(backend, "chunk_kda", lambda self, **kwargs: fake.chunk_kda(**kwargs))
    _check("kda")
    assert backends.take_noted() == "fla dispatch: flash_kda (chunk_kda)"


def test_fla_s_flash_kda_backend_declining_says_why(fake: Kernels, monkeypatch: pytest.MonkeyPatch) -> None:
    module = pytest.importorskip("fla.ops.kda.backends.flash_kda")
    monkeypatch.setattr(module.FlashKDABackend, "is_available", classmethod(lambda cls: True))
    monkeypatch.setattr(module.FlashKDABackend, "is_enabled", lambda self: True)
    _check("kda")
    noted = backends.take_noted() or ""
    assert "flash_kda: FlashKDA" in noted and noted.startswith("fla dispatch: fla-triton chunk_kda")
