"""``--kv-heads``, ``--chunk`` and ``--preset`` on the command line (CPU): the points they add,
the columns they fill, and bad input refused in one line, exit 2, naming the valid choices."""

from __future__ import annotations

import csv
from pathlib import Path

import pytest
from cli_helpers import Invoke, assert_usage_error

from linbench.sweep.presets import PRESETS

SMALL = ("--dim", "16", "--budget-s", "0.02", "--warmup-s", "0.01", "--device", "cpu", "--quiet")


def _rows(out: Path) -> list[dict[str, str]]:
    (folder,) = out.iterdir()
    with (folder / "results.csv").open(newline="") as handle:
        return list(csv.DictReader(handle))


@pytest.mark.parametrize(
    ("command", "args", "fragments"),
    [
        ("run", ("--heads", "8", "--kv-heads", "3"), ("kv_heads: 3 does not divide heads 8", "1, 2, 4, 8")),
        ("run", ("--heads", "6,8", "--kv-heads", "2,3"), ("kv_heads: 3 does not divide heads 8", "1, 2, 4, 8")),
        ("decode", ("--heads", "4", "--kv-heads", "8"), ("kv_heads: 8 does not divide heads 4", "1, 2, 4")),
        ("run", ("--preset", "llama9"), ("unknown preset 'llama9'", "presets: llama3-8b", "falcon-7b")),
        ("decode", ("--preset", "llama9"), ("unknown preset 'llama9'", "presets: llama3-8b")),
        (
            "run",
            ("--variant", "cosine:kernel", "--no-against", "--chunk", "2048"),
            ("--chunk 2048", "cosine:kernel cannot take it on cpu", "chunks of 1..1024 tokens"),
        ),
        (
            "run",
            ("--variant", "cosine:naive,cosine:recurrent", "--no-against", "--chunk", "64"),
            ("--chunk: no impl of this run takes a chunk size", "cosine:chunked"),
        ),
        (
            "run",
            ("--variant", "cosine:chunked", "--no-against", "--chunk", "64", "--param", "cosine.chunk_size=32"),
            ("--chunk and --param", "give one"),
        ),
        ("run", ("--chunk", "0"), ("chunk",)),
        (
            "run",
            ("--variant", "cosine:chunked", "--pack", "lognormal:mean=64", "--tokens", "1k", "--kv-heads", "1"),
            ("--pack runs as many key/value and value heads as heads", "drop --kv-heads, --v-heads and --chunk"),
        ),
        ("run", ("--preset", "qwen3-next-80b", "--tp", "3"), ("tp: 3 does not divide qwen3-next-80b",)),
        (
            "run",
            ("--variant", "kda:chunked,gla:chunked", "--gates", "lower-bound"),
            ("--gates lower-bound: gla: no gate profile 'lower-bound'",),
        ),
        ("run", ("--variant", "softmax", "--gates", "production"), ("no variant of the run has a gate",)),
        (
            "run",
            ("--variant", "gla", "--param", "gla.gate_regime=production"),
            ("gate_regime must be one of weak, strong; got 'production'",),
        ),
        ("decode", ("--tp", "2"), ("tp: divides a model's head counts; give it with --preset",)),
        ("run", ("--variant", "kda", "--heads", "2", "--v-heads", "3"), ("v_heads: 3 is not a multiple of heads 2",)),
        (
            "run",
            ("--variant", "softmax", "--heads", "2", "--v-heads", "4"),
            ("nothing to run: softmax has one value head per query head", "--v-heads"),
        ),
        (
            "decode",
            ("--variant", "kda", "--heads", "2", "--kv-heads", "1", "--v-heads", "4"),
            ("more value heads (GVA) and fewer key/value heads (--kv-heads) do not combine",),
        ),
    ],
)
def test_bad_shape_input_is_one_line_and_exit_2(
    invoke: Invoke, tmp_path: Path, command: str, args: tuple[str, ...], fragments: tuple[str, ...]
) -> None:
    out = tmp_path / "out"
    assert_usage_error(invoke(command, *args, "--device", "cpu", "--out", out), *fragments)
    assert not out.exists()


def test_the_cuda_kernel_refuses_a_chunk_other_than_64_at_plan_time() -> None:
    from linbench.variants.feature_forms.impls import KERNEL_CHUNK_SIZE

    assert KERNEL_CHUNK_SIZE.refusal(64, "cuda") is None
    assert "chunks of 64 tokens only" in str(KERNEL_CHUNK_SIZE.refusal(128, "cuda"))
    assert KERNEL_CHUNK_SIZE.refusal(128, "cpu") is None


def test_kv_heads_run_records_the_key_value_heads_and_how_each_impl_took_them(invoke: Invoke, tmp_path: Path) -> None:
    args = ("run", "--variant", "cosine:chunked,cosine:kernel", "--against", "softmax:sdpa", "--seq", "32")
    result = invoke(*args, "--heads", "4", "--kv-heads", "4,1", *SMALL, "--out", tmp_path)
    assert result.exit_code == 0, result.output
    seen = {(row["impl"], row["kv_heads"]): (row["gqa"], row["status"]) for row in _rows(tmp_path)}
    assert seen == {
        ("chunked", "4"): ("", "ok"),
        ("kernel", "4"): ("", "ok"),
        ("sdpa", "4"): ("", "ok"),
        ("chunked", "1"): ("native", "ok"),
        ("kernel", "1"): ("expanded", "ok"),
        ("sdpa", "1"): ("native", "ok"),
    }


def test_decode_state_shrinks_with_the_key_value_heads(invoke: Invoke, tmp_path: Path) -> None:
    args = ("decode", "--variant", "cosine", "--against", "softmax:kvcache", "--context", "32", "--tokens", "2")
    result = invoke(*args, "--heads", "4", "--kv-heads", "4,1", "--dim", "16", "--device", "cpu", "--out", tmp_path)
    assert result.exit_code == 0, result.output
    state = {(row["impl"], row["kv_heads"]): int(row["state_bytes"]) for row in _rows(tmp_path)}
    assert state[("recurrent", "1")] * 4 == state[("recurrent", "4")]
    assert state[("kvcache", "1")] * 4 == state[("kvcache", "4")]
    assert "KV=1" in result.stdout  # the summary tells the two apart


def test_v_heads_run_and_decode_record_the_value_heads_and_the_state_grows_with_them(
    invoke: Invoke, tmp_path: Path
) -> None:
    """GVA (Qwen3-Next's layout, small): gated-deltanet at 2 q/k heads against 2 and 4 value
    heads, softmax (the baseline) left out with the reason; decode's state is per value head."""
    args = ("run", "--variant", "gated-deltanet:chunked", "--seq", "32", "--heads", "2", "--v-heads", "2,4")
    result = invoke(*args, "--gates", "production", *SMALL, "--out", tmp_path / "run")
    assert result.exit_code == 0, result.output
    assert "softmax has one value head per query head" in result.stdout
    seen = {(row["variant"], row["v_heads"], row["status"]) for row in _rows(tmp_path / "run")}
    assert ("gated-deltanet", "4", "ok") in seen and ("gated-deltanet", "2", "ok") in seen
    assert ("softmax", "4", "ok") not in seen and ("softmax", "2", "ok") in seen
    how = {row["v_heads"]: row["gqa"] for row in _rows(tmp_path / "run") if row["variant"] == "gated-deltanet"}
    assert {row["params"] for row in _rows(tmp_path / "run") if row["variant"] == "gated-deltanet"} == {
        "gate_regime=production"
    }  # --gates: the gates drawn as the models compute them
    assert how == {"2": "", "4": "expanded"}  # the chunked form repeats q and k per value head
    args = ("decode", "--variant", "gated-deltanet", "--no-against", "--context", "32", "--tokens", "2")
    result = invoke(
        *args, "--heads", "2", "--v-heads", "2,4", "--dim", "16", "--device", "cpu", "--out", tmp_path / "d"
    )
    assert result.exit_code == 0, result.output
    state = {row["v_heads"]: int(row["state_bytes"]) for row in _rows(tmp_path / "d")}
    assert state["4"] == 2 * state["2"] == 2 * (2 * 16 * 16 * 4)  # H_v × Dk × Dv fp32


def test_a_hybrid_preset_runs_both_layer_kinds_and_report_gives_the_model_cost(invoke: Invoke, tmp_path: Path) -> None:
    """qwen3.5-397b at TP8 (2 q/k heads, 8 value heads; softmax 4 q, 1 kv), one short length."""
    args = ("run", "--preset", "qwen3.5-397b", "--tp", "8", "--seq", "64", "--variant", "gated-deltanet:chunked")
    quick = ("--budget-s", "0.02", "--warmup-s", "0.01", "--device", "cpu", "--quiet")  # the preset's head dims
    result = invoke(*args, "--against", "softmax:sdpa", *quick, "--out", tmp_path)
    assert result.exit_code == 0, result.output
    rows = {(row["variant"], row["heads"], row["v_heads"], row["kv_heads"], row["status"]) for row in _rows(tmp_path)}
    assert rows == {("gated-deltanet", "2", "8", "2", "ok"), ("softmax", "4", "4", "1", "ok")}
    (folder,) = tmp_path.iterdir()
    assert folder.name.endswith("qwen3.5-397b-tp8")
    report = invoke("report", str(folder))
    assert report.exit_code == 0, report.output
    assert "qwen3.5-397b model attention cost per token (prefill)" in report.stdout
    assert "45×" in report.stdout and "+ 15×" in report.stdout and "/ 1×64 tokens" in report.stdout


def test_chunk_sweep_gives_a_point_per_chunk_size_to_the_impls_that_take_one(invoke: Invoke, tmp_path: Path) -> None:
    args = ("run", "--variant", "cosine:chunked,cosine:kernel,cosine:recurrent", "--no-against", "--seq", "64")
    result = invoke(*args, "--heads", "2", "--chunk", "16,32", *SMALL, "--out", tmp_path)
    assert result.exit_code == 0, result.output
    seen = sorted((row["impl"], row["chunk"], row["status"]) for row in _rows(tmp_path))
    assert seen == [
        ("chunked", "16", "ok"),
        ("chunked", "32", "ok"),
        ("kernel", "16", "ok"),
        ("kernel", "32", "ok"),
        ("recurrent", "", "ok"),
    ]


@pytest.mark.parametrize("name", list(PRESETS))
def test_every_preset_plans_its_shape(invoke: Invoke, tmp_path: Path, name: str) -> None:
    """The dry run of each preset shows its heads, key/value heads and head dim."""
    preset = PRESETS[name]
    result = invoke("run", "--preset", name, "--variant", "cosine:chunked", "--dry-run", "--device", "cpu")
    assert result.exit_code == 0, result.output
    axes = f"heads {preset.heads} · kv_heads {preset.kv_heads} · dim {preset.dim}"
    assert axes in result.stdout, result.stdout


def test_flags_override_a_preset(invoke: Invoke) -> None:
    result = invoke("run", "--preset", "llama3-8b", "--seq", "256", "--kv-heads", "32", "--dry-run", "--device", "cpu")
    assert result.exit_code == 0, result.output
    assert "seq 256 · batch 1 · heads 32 · kv_heads 32 · dim 128" in result.stdout


def test_suites_lists_the_presets_with_their_sources(invoke: Invoke) -> None:
    result = invoke("suites")
    assert result.exit_code == 0, result.output
    for name in PRESETS:
        assert name in result.stdout
    assert "Llama 3 Herd of Models" in result.stdout
