"""`linbench check`'s one-config autotuner (CPU: a stand-in of Triton's benchmark, and a real
autotuned Triton kernel under Triton's interpreter)."""

from __future__ import annotations

import importlib.util
import math
from collections.abc import Iterator
from typing import Any

import pytest
import torch

from linbench.variants.feature_forms import autotune_pin as pin


@pytest.fixture
def unpinned() -> Iterator[None]:
    """The pin taken out again after the test, whatever it installed."""
    yield
    pin.unpin()


@pytest.mark.parametrize(("value", "on"), [("1", True), ("yes", True), ("0", False), ("", False)])
def test_the_variable_asks_for_the_pin(monkeypatch: pytest.MonkeyPatch, value: str, on: bool) -> None:
    monkeypatch.setenv(pin.ENV, value)
    assert pin.requested() is on


class _Tuner:
    """What the pinned benchmark reads of a Triton autotuner: the tuning call's arguments."""

    def __init__(self) -> None:
        self.nargs: dict[str, Any] = {"n": 100}


def test_a_tuning_loop_runs_only_the_first_config_that_compiles(monkeypatch: pytest.MonkeyPatch) -> None:
    """Triton's own benchmark answers inf for a config it cannot compile here; the pin passes
    over it, runs the next once, and neither compiles nor runs the ones after."""
    ran: list[str] = []

    def triton_bench(self: Any, *args: Any, config: str, **meta: Any) -> list[float]:  # Triton's _bench, stood in
        if config == "too-big":
            return [math.inf] * 3  # Triton's answer to OutOfResources
        return self.do_bench(lambda: ran.append(config), quantiles=(0.5, 0.2, 0.8))

    monkeypatch.setitem(pin._original, "bench", triton_bench)
    tuner = _Tuner()
    timings = {config: pin._first_config_that_runs(tuner, config=config) for config in ("too-big", "a", "b")}
    assert min(timings, key=lambda c: timings[c]) == "a"  # the autotuner's own choice: the least
    assert ran == ["a"] and timings["b"] == [math.inf] * 3
    assert "do_bench" not in tuner.__dict__  # Triton's timing loop is back for the next caller
    tuner.nargs = {"n": 200}  # the next tuning (another key) runs its first config again
    pin._first_config_that_runs(tuner, config="a")
    assert ran == ["a", "a"]


def test_the_disk_cache_is_left_out_while_pinned() -> None:
    ran: list[bool] = []
    assert pin._no_disk_cache(None, ("key",), [], lambda: ran.append(True)) is False
    assert ran == [True]


def _triton_own_autotuner() -> Any:
    """Triton's own Autotuner, from a fresh copy of its module: another test in this process
    may have bridged the interpreter (which replaces ``_bench`` on the class) or run a point in
    process (linbench's watch replaces ``run``, and binds the memo to that point's scope)."""
    from triton.runtime import autotuner

    spec = importlib.util.spec_from_file_location("triton.runtime._own_autotuner", autotuner.__file__)
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module.Autotuner


def test_a_real_autotuned_kernel_keeps_its_first_config_run_once(
    monkeypatch: pytest.MonkeyPatch, unpinned: None
) -> None:
    """Under Triton's interpreter (no GPU to time on), with Triton's own benchmark in place:
    the tuning runs the first config once and the call runs it again, nothing else."""
    triton = pytest.importorskip("triton")
    import triton.language as tl
    from triton.runtime import autotuner

    monkeypatch.setenv("TRITON_INTERPRET", "1")
    own = _triton_own_autotuner()
    monkeypatch.setattr(autotuner.Autotuner, "_bench", own._bench)
    monkeypatch.setattr(autotuner.Autotuner, "run", own.run)
    configs = [triton.Config({"BLOCK": block}) for block in (16, 32, 64)]

    @triton.autotune(configs=configs, key=["n"])
    @triton.jit
    def add_one(x_ptr, count_ptr, n, BLOCK: tl.constexpr):  # type: ignore[no-untyped-def]
        offsets = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
        inside = offsets < n
        tl.store(x_ptr + offsets, tl.load(x_ptr + offsets, mask=inside) + 1, mask=inside)
        tl.atomic_add(count_ptr, 1)

    assert pin.pin_first_config() and pin.pinned()
    x, count = torch.zeros(100), torch.zeros(1, dtype=torch.int32)
    add_one[lambda meta: (triton.cdiv(100, meta["BLOCK"]),)](x, count, 100)
    assert add_one.best_config.kwargs == {"BLOCK": 16}
    assert int(count) == 2 * 7  # 7 programs of 16, in the tuning's one run and the call's
    assert torch.equal(x, torch.full((100,), 2.0))
    pin.unpin()
    assert not pin.pinned()
