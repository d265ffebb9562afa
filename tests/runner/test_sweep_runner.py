"""Every way a point can end, through real worker processes: the sweep always goes on."""

from __future__ import annotations

import re
from collections.abc import Callable
from dataclasses import replace
from pathlib import Path
from typing import Any

import pytest
from sweep_helpers import make_points, run_points, run_store, sweep_plan

from linbench.results.store import WORKER_LOG, RunStore
from linbench.runner.kind_protocol import Task
from linbench.runner.plan import COMPILE_ALLOWANCE_S
from linbench.runner.supervisor import Supervisor
from linbench.runner.sweep_runner import SweepRunner


def by_impl_and_seq(rows: list[dict[str, Any]]) -> dict[tuple[str, int], dict[str, Any]]:
    return {(r["impl"], r["seq"]): r for r in rows}


def test_a_wrong_impl_is_a_mismatch_and_never_timed(tmp_path: Path) -> None:
    rows = by_impl_and_seq(run_points(tmp_path, make_points([("planted", "good"), ("planted", "wrong")], [64, 128])))
    assert rows["good", 64]["status"] == "ok" and float(rows["good", 64]["time_ms"]) > 0
    for seq in (64, 128):
        wrong = rows["wrong", seq]
        assert wrong["status"] == "mismatch"
        assert wrong["time_ms"] is None and wrong["tflops"] is None
        assert float(wrong["rel_err"]) > 0.01 and "tol" in wrong["error"]


def test_out_of_memory_is_recorded_and_larger_points_skipped(tmp_path: Path) -> None:
    rows = by_impl_and_seq(
        run_points(tmp_path, make_points([("planted", "oom"), ("planted", "good")], [256, 512, 1024]))
    )
    assert rows["oom", 256]["status"] == "ok"
    assert rows["oom", 512]["status"] == "oom" and "memory" in rows["oom", 512]["error"]
    assert rows["oom", 1024]["status"] == "skipped" and "ran out of memory" in rows["oom", 1024]["error"]
    assert rows["good", 1024]["status"] == "ok"  # the sweep went on


def test_a_crashing_worker_is_recorded_and_replaced(tmp_path: Path) -> None:
    rows = by_impl_and_seq(
        run_points(tmp_path, make_points([("planted", "crash"), ("planted", "good")], [256, 512, 1024]))
    )
    assert rows["crash", 256]["status"] == "ok"
    for seq in (512, 1024):  # a crash may depend on the size, so larger points are still tried
        assert rows["crash", seq]["status"] == "crashed"
        assert "SIGSEGV" in rows["crash", seq]["error"]
    assert rows["good", 1024]["status"] == "ok"


# planted.py's hang blocks (for an hour) from this length on, and behaves below it.
HANG_FROM_SEQ = 512
HANG_LIMIT_S = 0.5


def _blocks(task: Task) -> bool:
    return task.point.impl == "hang" and task.point.shape.seq >= HANG_FROM_SEQ


@pytest.fixture
def only_the_hang_is_limited(monkeypatch: pytest.MonkeyPatch) -> None:
    """A call of hang that blocks gets HANG_LIMIT_S; every other call (the gates and points
    that behave) keeps the run's limit. A single limit would set the points that behave
    racing the clock: each is two forks (gate, then measure) that import and check before
    anything is timed, which a busy machine can slow past any short limit. A batch that
    holds a blocking call (the gates checked ahead) runs one task at a time, each under its
    own limit; the tasks a timeout would have cut off run then, as the runner would run
    them later, alone."""
    run_batch = Supervisor.run_batch

    def limited(self: Supervisor, tasks: list[Task], timeout_s: float) -> list[tuple[dict[str, Any] | None, float]]:
        if not any(_blocks(task) for task in tasks):
            return run_batch(self, tasks, timeout_s)
        return [run_batch(self, [task], HANG_LIMIT_S if _blocks(task) else timeout_s)[0] for task in tasks]

    monkeypatch.setattr(Supervisor, "run_batch", limited)


@pytest.mark.usefixtures("short_grace", "only_the_hang_is_limited")
def test_a_point_past_the_time_limit_is_a_timeout(tmp_path: Path) -> None:
    points = make_points([("planted", "hang"), ("planted", "good")], [256, 512, 1024])
    rows = by_impl_and_seq(run_points(tmp_path, points, timeout_s=600.0))
    assert rows["hang", 256]["status"] == "ok"
    assert rows["hang", 512]["status"] == "timeout" and "no result within 0.5 s" in rows["hang", 512]["error"]
    assert rows["hang", 1024]["status"] == "skipped" and "timed out" in rows["hang", 1024]["error"]
    assert rows["good", 1024]["status"] == "ok"


def test_a_torch_compile_impl_s_tasks_get_the_compile_allowance_beside_the_limit(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """CPU, real workers: every task of an impl torch.compile builds (here planted:good, marked
    so in the plan) is given --timeout-s and the compile allowance, its check's too; every task
    of another impl --timeout-s alone. The limits handed to the supervisor are recorded."""
    given: dict[str, set[float]] = {}
    run, run_batch = Supervisor.run, Supervisor.run_batch

    def note(tasks: list[Task], timeout_s: float | Callable[[Task], float]) -> None:
        for task in tasks:
            limit = timeout_s(task) if callable(timeout_s) else timeout_s
            given.setdefault(f"{task.point.impl} {task.job}", set()).add(limit)

    def run_noted(self: Supervisor, task: Task, timeout_s: float, worker: Any = None) -> Any:
        note([task], timeout_s)
        return run(self, task, timeout_s, worker)

    def run_batch_noted(self: Supervisor, tasks: list[Task], timeout_s: float | Callable[[Task], float]) -> Any:
        note(tasks, timeout_s)
        return run_batch(self, tasks, timeout_s)

    monkeypatch.setattr(Supervisor, "run", run_noted)
    monkeypatch.setattr(Supervisor, "run_batch", run_batch_noted)
    plan = sweep_plan(make_points([("planted", "good"), ("planted", "wrong")], [64]), timeout_s=60.0)
    plan = replace(plan, compiling=frozenset({("planted", "good")}))
    runner = SweepRunner(plan, RunStore.create(tmp_path, "test"))
    runner.run(runner.pending())
    assert given == {
        "good gate": {60.0 + COMPILE_ALLOWANCE_S},
        "good measure": {60.0 + COMPILE_ALLOWANCE_S},
        "wrong gate": {60.0},
    }


def test_memory_of_a_point_does_not_depend_on_what_ran_before(tmp_path: Path) -> None:
    """A point's peak RSS in its curve's warm worker, after a longer point (and the correctness
    check, which runs there first), still counts its own buffers: the worker hands the heap the
    longer point freed back before the measured call, which would otherwise reuse it unseen.

    Judged against the point's alloc_peak_bytes, the live bytes its call holds at once by the
    allocator's own count: exact, and the same whatever ran before or how many threads run
    (tests/runner/test_alloc_peak.py). A peak RSS window that sees the call's pages reads at
    least that; one that missed them reads less. Measured here at one thread: alloc 40.8 MiB;
    peak RSS 48.8 MiB in a fresh fork, 51.4 MiB in the warm worker after 8k; without the heap
    handed back, 0 to 32 MiB over three tries. Comparing the two peak RSS readings instead moved
    with the machine (the allocator's state, the thread count)."""
    shape = (1, 8, 64)
    longer_first = make_points([("cosine", "chunked")], [8192, 4096], shape)
    store = run_store(tmp_path, longer_first, share_workers=True, threads=1)
    assert len({row["pid"] for row in store.process_rows()}) == 1  # both points in one warm worker
    after = by_impl_and_seq(store.rows())["chunked", 4096]
    live = int(after["alloc_peak_bytes"])
    assert live > 8 << 20  # q, k, v and the output alone are 8 MiB at this shape
    assert int(after["peak_bytes"]) >= live


@pytest.mark.cuda
def test_a_cuda_point_reports_allocator_nvml_and_clock_columns(tmp_path: Path) -> None:
    from dataclasses import replace

    points = [replace(p, device="cuda:0") for p in make_points([("cosine", "chunked"), ("softmax", "sdpa")], [1024])]
    rows = run_points(tmp_path, points)
    for row in rows:
        assert row["status"] == "ok", row["error"]
        assert int(row["peak_bytes"]) > 0 and int(row["reserved_bytes"]) >= int(row["peak_bytes"])
        assert int(row["nvml_peak_bytes"]) > int(row["peak_bytes"])  # the context is counted too
        assert int(row["sm_clock_mhz"]) > 0 and row["device_name"]


def test_checks_sharing_no_reference_run_side_by_side_in_the_workers_of_their_curves(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """On CPU with warm workers and two threads on two cores, the checks of two variants run in
    two lanes, one thread each, each in the worker of its variant's first curve; a curve
    whose impl its worker checked is measured warm there (worker.py), in that same worker."""
    from linbench.runner import schedule

    monkeypatch.setattr(schedule, "usable_cpus", lambda: [0, 1])
    handed: list[list[tuple[object, Task]]] = []
    real = Supervisor.run_side_by_side

    def recorded(self: Supervisor, lanes: Any, timeout_s: float) -> Any:
        handed.extend(lanes)
        return real(self, lanes, timeout_s)

    monkeypatch.setattr(Supervisor, "run_side_by_side", recorded)
    # planted's hang impl behaves below 512 tokens: a second impl sharing good's reference.
    points = make_points([("planted", "good"), ("planted", "hang"), ("linear", "chunked")], [64])
    store = run_store(tmp_path, points, share_workers=True, threads=2)
    lanes = sorted([(task.point.variant, task.point.impl, task.threads) for _, task in lane] for lane in handed)
    assert lanes == [[("linear", "chunked", 1)], [("planted", "good", 1), ("planted", "hang", 1)]]
    homes = {task.point.variant: key for lane in handed for key, task in lane}
    assert homes == {"planted": points[0].series, "linear": points[2].series}
    rows = {r["impl"]: r for r in store.rows()}
    assert {row["status"] for row in rows.values()} == {"ok"}
    # Each check ran in the worker that then measured its home curve (the worker log's headers
    # name the job, the point and the pid).
    log = (store.path / WORKER_LOG).read_text()
    pid = {
        (job, impl): int(p) for job, impl, p in re.findall(r"^== (gate|measure) \w+:(\w+) .*\(pid (\d+)\)$", log, re.M)
    }
    assert pid["gate", "good"] == pid["gate", "hang"] == pid["measure", "good"] != pid["measure", "hang"]
    assert pid["gate", "chunked"] == pid["measure", "chunked"] != pid["measure", "good"]
