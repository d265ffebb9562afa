"""Triton's autotuner watched per scope: a small autotuned kernel whose key leaves the length out,
run on the CPU under Triton's interpreter, its benchmark stood in by one that prefers a block size
by length (device: CPU; needs triton, skipped without it)."""

from __future__ import annotations

import fcntl
import importlib.util
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest
import torch

from linbench.measure import autotune
from linbench.measure.autotune_store import ConfigStore

pytestmark = pytest.mark.skipif(importlib.util.find_spec("triton") is None, reason="needs triton")


def _benchmark_by_length(benched: list[int]) -> Callable[..., list[float]]:
    """The autotuner's per-config benchmark, stood in: BLOCK=16 wins below 64 elements, BLOCK=64
    from 64 on (what a GPU might say); each benchmark's length noted in ``benched``."""

    def bench(self: Any, *args: Any, config: Any, **meta: Any) -> list[float]:
        length = int(self.nargs["N"])
        benched.append(length)
        best = 16 if length < 64 else 64
        return [0.0 if config.kwargs["BLOCK"] == best else 1.0] * 3

    return bench


@pytest.fixture
def kernel(monkeypatch: pytest.MonkeyPatch) -> Iterator[tuple[Callable[[int], None], Any, list[int]]]:
    """(call(n), the autotuner, the lengths benchmarked): an autotuned doubling kernel keyed on D
    alone, defined under the interpreter; Triton's own Autotuner.run is back after the test."""
    monkeypatch.setenv("TRITON_INTERPRET", "1")
    import triton
    import triton.language as tl
    from triton.runtime.autotuner import Autotuner

    configs = [triton.Config({"BLOCK": 16}, num_warps=1), triton.Config({"BLOCK": 64}, num_warps=2)]

    @triton.autotune(configs=configs, key=["D"])
    @triton.jit
    def double(x, y, N, D, BLOCK: tl.constexpr):  # type: ignore[no-untyped-def]
        i = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
        tl.store(y + i, tl.load(x + i, mask=i < N) * 2, mask=i < N)

    benched: list[int] = []
    double._bench = _benchmark_by_length(benched).__get__(double)

    def call(n: int) -> None:
        x = torch.randn(n)
        y = torch.empty(n)
        double[lambda meta: (triton.cdiv(n, meta["BLOCK"]),)](x, y, n, 4)
        assert torch.equal(y, 2 * x)

    original = Autotuner.run
    yield call, double, benched
    Autotuner.run = original
    autotune.quiet()


def test_without_a_watch_triton_reuses_the_first_lengths_config_at_every_length(kernel: Any) -> None:
    """The defect the watch exists for: the key leaves the length out, so the choice made at 16
    elements is what runs at 128."""
    call, double, _ = kernel
    call(16)
    call(128)
    assert double.best_config.kwargs["BLOCK"] == 16


def test_a_scope_tunes_at_its_own_length_and_no_config_crosses_scopes(kernel: Any, tmp_path: Path) -> None:
    call, double, benched = kernel
    assert autotune.install()
    autotune.enter("check at 16", ConfigStore(tmp_path))
    call(16)
    assert autotune.reading().configs == "double: BLOCK=16 warps=1 stages=3"
    autotune.enter("point at 128", ConfigStore(tmp_path), lock=True)
    call(128)  # the warm-up at the point's own length: tuned there
    autotune.quiet()
    call(128)  # a timed call: Triton's own run, the scope's choice
    assert double.best_config.kwargs["BLOCK"] == 64
    assert benched == [16, 16, 128, 128]  # each config benchmarked once per scope, at its length
    seen = autotune.reading()
    assert (seen.configs, seen.source) == ("double: BLOCK=64 warps=2 stages=3", "tuned")
    assert seen.tune_s is not None and seen.tune_s >= 0.0


def test_a_later_process_of_the_point_reads_its_choice_from_the_store(kernel: Any, tmp_path: Path) -> None:
    call, double, benched = kernel
    autotune.install()
    autotune.enter("point at 128", ConfigStore(tmp_path), lock=True)
    call(128)
    autotune.quiet()
    del double.__dict__["_linbench_memos"], double.__dict__["_linbench_tuned"]  # as a fresh process
    autotune.enter("point at 128", ConfigStore(tmp_path), lock=True)
    call(128)
    seen = autotune.reading()
    assert benched == [128, 128]  # not benchmarked again
    assert (seen.configs, seen.source, seen.tune_s) == ("double: BLOCK=64 warps=2 stages=3", "cache", 0.0)
    # Another point's scope reads nothing of it: tuned at its own length.
    autotune.enter("point at 16", ConfigStore(tmp_path))
    call(16)
    assert autotune.reading().configs == "double: BLOCK=16 warps=1 stages=3"


def test_a_kernel_tuned_inside_a_timed_call_is_still_recorded(kernel: Any, tmp_path: Path) -> None:
    call, _, _ = kernel
    autotune.install()
    autotune.enter("point at 128", ConfigStore(tmp_path))
    autotune.quiet()  # no warm-up ran the kernel
    call(128)
    assert autotune.reading().configs == "double: BLOCK=64 warps=2 stages=3"


def test_triton_s_own_disk_cache_is_off_in_a_watched_autotuner(kernel: Any, tmp_path: Path) -> None:
    call, double, _ = kernel
    double.cache_results = True
    autotune.install()
    autotune.enter("point at 16", ConfigStore(tmp_path))
    call(16)
    assert double.cache_results is False


def test_the_first_process_to_tune_a_scope_holds_its_lock(tmp_path: Path) -> None:
    store = ConfigStore(tmp_path)
    lock = tmp_path / f"{store.path('a point').stem}.lock"
    with store.first_tuning("a point"), open(lock) as other, pytest.raises(BlockingIOError):
        fcntl.flock(other, fcntl.LOCK_EX | fcntl.LOCK_NB)
    store.save("a point", {"k": {"[1]": {"text": "BLOCK=16 warps=1 stages=3"}}}, 1.5, 0.5)
    store.save("a point", {"k": {"[2]": {"text": "BLOCK=64 warps=2 stages=3"}}}, 1.0, 0.0)
    assert store.load("a point") == {
        "k": {"[1]": {"text": "BLOCK=16 warps=1 stages=3"}, "[2]": {"text": "BLOCK=64 warps=2 stages=3"}}
    }
    assert store.read("a point")["tune_s"] == 2.5 and not store.has("another point")
