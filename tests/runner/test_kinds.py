"""The kinds of point: resolved once from the command, each supplying what differs between a
run point and a decode point (device: cpu; the GPU steps stood in)."""

from __future__ import annotations

import pytest
import torch

from linbench.measure.timing_policy import TimingPolicy
from linbench.results.kinds import DECODE_ROWS, RUN_ROWS, row_kind
from linbench.results.processes import ProcessResult
from linbench.results.record import PER_SECOND, PER_TOKEN
from linbench.runner import execute_gpu
from linbench.runner.decode_workload import DecodeWorkload
from linbench.runner.kind_protocol import Kind, Task
from linbench.runner.kinds import DECODE, KINDS, RUN, kind_of, kind_of_mode
from linbench.runner.pack_kind import PackKind
from linbench.runner.workload import Workload
from linbench.shape import Shape
from linbench.sweep.lengths import draw_pack
from linbench.sweep.points import Point
from linbench.sweep.request import SweepRequest
from linbench.sweep.spec import build_spec

OK = ProcessResult("ok", time_ms=1.0)
CPU = torch.device("cpu")


def _point(mode: str, impl: str = "chunked", seq: int = 64) -> Point:
    return Point("cosine", impl, mode, True, "fp32", "cpu", Shape(1, 2, seq, 16, 16))


def test_the_kind_is_the_command_s_and_a_row_s_mode_says_which() -> None:
    assert (kind_of("run"), kind_of("decode")) == (RUN, DECODE)
    assert [kind_of_mode(mode) for mode in ("fwd", "bwd", "fwdbwd", "decode")] == [RUN, RUN, RUN, DECODE]
    members = [name for name in dir(Kind) if not name.startswith("_")]
    pack = kind_of("run", draw_pack("lognormal:mean=64", 256))  # a run of a pack: a kind made for it
    assert isinstance(pack, PackKind) and pack.modes == RUN.modes
    for kind in (*KINDS.values(), pack):  # every kind kind_of gives
        assert all(hasattr(kind, name) for name in members), kind.name


def test_the_runner_s_kinds_speak_their_rows_words() -> None:
    # One table (results/kinds.py) for the runner and the reading side: a report names a
    # decode row's length as the runner's decode kind does.
    assert (RUN.words, RUN.rate, RUN.modes) == (RUN_ROWS.words, RUN_ROWS.rate, RUN_ROWS.modes)
    assert (DECODE.words, DECODE.rate, DECODE.modes) == (DECODE_ROWS.words, DECODE_ROWS.rate, DECODE_ROWS.modes)
    assert [row_kind(mode) for mode in ("fwd", "bwd", "fwdbwd", "decode")] == [RUN_ROWS] * 3 + [DECODE_ROWS]


def test_a_decode_point_is_one_process_of_exact_steps_and_no_shared_worker() -> None:
    spec = build_spec(SweepRequest(command="decode", context="1k", tokens=8))
    assert DECODE.timing(spec, CPU) == TimingPolicy.for_decode(8)
    assert (DECODE.protocol(spec).wanted, DECODE.protocol(spec).most) == (1, 1)
    assert not DECODE.shares_workers(torch.device("cuda")) and RUN.shares_workers(torch.device("cuda"))
    run = build_spec(SweepRequest(processes=3))
    assert RUN.timing(run, torch.device("cuda")).budget_s == 0.3 and RUN.protocol(run).wanted == 3


def test_each_kind_s_facts_give_its_row_its_flops_context_and_rate() -> None:
    run = RUN.facts(_point("fwd"), "Test CPU", "chunk_size=64")
    assert run.flops and run.context is None and run.rate == PER_SECOND and run.tokens == 64
    decode = DECODE.facts(_point("decode", "recurrent"), "Test CPU", "")
    assert decode.flops is None and decode.context == 64 and decode.rate == PER_TOKEN


def test_the_words_of_each_kind() -> None:
    assert (RUN.words.per, RUN.words.lengths, RUN.words.targets, RUN.lower[:5]) == ("call", "lengths", "impls", "--seq")
    assert (DECODE.words.call, DECODE.words.per, DECODE.words.targets) == ("step", "token", "decoders")
    assert DECODE.lower.startswith("--context")


@pytest.mark.parametrize("cuda_graph", [True, False])
@pytest.mark.parametrize("count_launches", [True, False])
def test_on_cuda_the_graph_comes_before_the_count_and_each_only_when_asked(
    monkeypatch: pytest.MonkeyPatch, cuda_graph: bool, count_launches: bool
) -> None:
    order = _stand_in_gpu(monkeypatch)
    point = _point("fwd")
    task = Task(
        "measure", point, TimingPolicy.for_device("cpu"), RUN, cuda_graph=cuda_graph, count_launches=count_launches
    )
    RUN.after_eager(task, Workload(point, CPU), torch.device("cuda"), OK)
    assert order == ["graph"] * cuda_graph + ["count"] * count_launches


@pytest.mark.parametrize("count_launches", [True, False])
def test_a_decode_step_is_graphed_and_counted_only_with_cuda_graph(
    monkeypatch: pytest.MonkeyPatch, count_launches: bool
) -> None:
    order = _stand_in_gpu(monkeypatch)
    point = _point("decode", "recurrent")
    for cuda_graph in (False, True):
        task = Task(
            "measure", point, TimingPolicy.for_decode(2), DECODE, cuda_graph=cuda_graph, count_launches=count_launches
        )
        work, held = DECODE.workload(task, CPU)
        assert isinstance(work, DecodeWorkload) and held is not None and held > 0
        assert DECODE.after_eager(task, work, torch.device("cuda"), OK) == OK
    assert order == ["graph"] + ["count"] * count_launches


def _stand_in_gpu(monkeypatch: pytest.MonkeyPatch) -> list[str]:
    """What the kinds call on a GPU, stood in: the order they were called in."""
    order: list[str] = []

    def graph(result: ProcessResult, *args: object) -> ProcessResult:
        order.append("graph")
        return result

    def count(result: ProcessResult, *args: object, **kwargs: object) -> ProcessResult:
        order.append("count")
        return result

    monkeypatch.setattr(execute_gpu, "with_graph", graph)
    monkeypatch.setattr(execute_gpu, "with_launches", count)
    return order
