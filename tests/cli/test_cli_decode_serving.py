"""``linbench decode`` as it is served: a tiny serving run on CPU, and bad input (exit 2)."""

from __future__ import annotations

import csv
from pathlib import Path

import pytest
from cli_helpers import Invoke, assert_usage_error

CPU = ("--device", "cpu")
TINY = ("--heads", "2", "--dim", "16", "--tokens", "3", "--drift-steps", "8", *CPU)


def _rows(out: Path) -> list[dict[str, str]]:
    (folder,) = out.iterdir()
    with (folder / "results.csv").open() as handle:
        return list(csv.DictReader(handle))


def test_a_serving_run_reports_per_request_state_accepted_tokens_drift_and_capacity(
    invoke: Invoke, tmp_path: Path
) -> None:
    """Requests at drawn contexts in a pool of 5 slots, 2 tokens a step, half the drafts kept."""
    args = ("--variant", "gated-deltanet", "--against", "softmax:kvcache", "--batch", "2", "--pool", "5")
    serving = ("--contexts", "uniform:min=8,max=24", "--tokens-per-step", "2", "--accept", "0.5")
    result = invoke(
        "decode",
        *args,
        *serving,
        "--state-dtype",
        "fp32,bf16,fp16,fp64",
        "--memory-budget",
        "1GiB",
        *TINY,
        "--out",
        tmp_path,
    )
    assert result.exit_code == 0, result.output
    rows = {(r["impl"], r["state_dtype"]): r for r in _rows(tmp_path)}
    assert set(rows) == {("recurrent", d) for d in ("fp32", "bf16", "fp16", "fp64")} | {("kvcache", "")}
    for row in rows.values():
        assert row["status"] == "ok", row["error"] and row["tokens_per_step"] == "2" and row["accept"] == "0.5"
        assert row["pool"] == "5" and row["contexts"].startswith("uniform:min=8,max=24")
        kept = float(row["accepted_per_step"])
        assert 1.0 <= kept <= 2.0
        assert float(row["time_per_accepted_token_ms"]) == pytest.approx(float(row["time_ms"]) / kept, rel=1e-4)
        assert float(row["tokens_per_s"]) == pytest.approx(2 * kept / float(row["time_ms"]) * 1e3, rel=1e-4)
        assert int(row["requests_fit"]) == 2**30 // int(row["state_bytes_per_request"])
    fp32, bf16 = rows["recurrent", "fp32"], rows["recurrent", "bf16"]
    # H·Dk·Dv per slot, 4 bytes or 2; the pool holds 5 slots.
    assert (int(fp32["state_bytes_per_request"]), int(bf16["state_bytes_per_request"])) == (
        2 * 16 * 16 * 4,
        2 * 16 * 16 * 2,
    )
    assert int(fp32["state_bytes"]) == 5 * 2 * 16 * 16 * 4
    # fp32's drift is rounding; bf16's 8-bit mantissa shows after 8 steps.
    assert float(fp32["state_drift"]) < 1e-5 < float(bf16["state_drift"]) < 0.1 and fp32["drift_steps"] == "8"
    assert rows["kvcache", ""]["state_drift"] == ""
    # fp16 and fp64 are kept as named: 2 and 8 bytes an element; fp16's 11-bit mantissa drifts, fp64
    # only by the fp32 step's own rounding.
    fp16, fp64 = rows["recurrent", "fp16"], rows["recurrent", "fp64"]
    assert (int(fp16["state_bytes_per_request"]), int(fp64["state_bytes_per_request"])) == (
        2 * 16 * 16 * 2,
        2 * 16 * 16 * 8,
    )
    assert float(fp64["state_drift"]) < 1e-5 < float(fp16["state_drift"]) < 0.1


def test_the_state_dtype_help_and_doc_name_every_dtype_it_takes() -> None:
    from linbench.cli.decode_cmd import HELP, STATE_DTYPES
    from linbench.dtypes import DTYPE_NAMES

    assert set(STATE_DTYPES) == set(DTYPE_NAMES) and all(name in HELP["state_dtype"] for name in DTYPE_NAMES)
    doc = (Path(__file__).parents[2] / "docs" / "decode.md").read_text()
    assert f"--state-dtype {','.join(STATE_DTYPES)}" in doc


@pytest.mark.parametrize(
    ("args", "fragment"),
    [
        (("--batch", "4", "--pool", "2"), "pool ≥ batch"),
        (
            (
                "--tokens-per-step",
                "0",
            ),
            "tokens_per_step",
        ),
        (("--tokens-per-step", "2", "--accept", "3"), "above --tokens-per-step 2"),
        (("--accept", "0.7"), "accept: 0.7 with one token a step: there is no draft token"),
        (("--tokens-per-step", "1", "--accept", "1"), "with one token a step"),
        (("--drift-steps", "1000000000"), "drift_steps: 1000000000 is past 65536"),
        (
            (
                "--accept",
                "1.5",
            ),
            "accept",
        ),
        (
            (
                "--contexts",
                "zipf:max=8",
            ),
            "contexts",
        ),
        (
            (
                "--memory-budget",
                "lots",
            ),
            "memory_budget",
        ),
        (("--state-layout", "k-first"), "the layouts are v-last, k-last"),
    ],
)
def test_bad_serving_input_is_one_line_and_exit_2(invoke: Invoke, args: tuple[str, ...], fragment: str) -> None:
    context = () if "--contexts" in args else ("--context", "16")
    result = invoke("decode", "--variant", "gated-deltanet", *context, *args, "--dry-run", *CPU)
    assert_usage_error(result, fragment)


def test_an_accept_rate_is_judged_over_every_block_of_a_suite(invoke: Invoke, tmp_path: Path) -> None:
    """One token a step in one [[sweep]] table and four in another is the suite that says
    tokens_per_step = "1,4": the rate has drafts to keep in the second, so it plans."""
    suite = tmp_path / "split.toml"
    suite.write_text(
        'command = "decode"\nvariant = ["gated-deltanet:recurrent"]\nno_against = true\ndevice = "cpu"\n'
        'context = 16\ntokens = 2\naccept = "0.5"\n[[sweep]]\ntokens_per_step = 1\n[[sweep]]\ntokens_per_step = 4\n'
    )
    result = invoke("decode", "--suite", suite, "--dry-run", *CPU)
    assert result.exit_code == 0, result.output
    suite.write_text(suite.read_text().replace("tokens_per_step = 4", "tokens_per_step = 1"))
    assert_usage_error(invoke("decode", "--suite", suite, "--dry-run", *CPU), "accept: 0.5 with one token a step")


def test_drawn_contexts_beside_a_context_axis_is_a_usage_error_and_alone_the_plan_says_drawn(invoke: Invoke) -> None:
    """--context was dropped without a word beside --contexts, and the plan showed the
    default context axis where each request's context is drawn."""
    both = invoke("decode", "--variant", "gated-deltanet", "--contexts", "uniform:max=64", "--context", "16,32",
                  "--dry-run", *CPU)  # fmt: skip
    assert_usage_error(both, "--contexts draws each request's context, --context sets one for all")
    alone = invoke("decode", "--variant", "gated-deltanet", "--contexts", "uniform:max=64", "--dry-run", *CPU)
    assert alone.exit_code == 0 and "axes: context drawn per request from uniform:" in alone.stdout


def test_a_state_dtype_for_decoders_that_keep_only_a_kv_cache_is_refused(invoke: Invoke) -> None:
    result = invoke(
        "decode", "--variant", "softmax:kvcache", "--no-against", "--state-dtype", "bf16", "--dry-run", *CPU
    )
    assert_usage_error(result, "--state-dtype", "softmax:kvcache")


def test_a_state_layout_for_decoders_that_keep_only_a_kv_cache_is_refused(invoke: Invoke) -> None:
    result = invoke(
        "decode", "--variant", "softmax:kvcache", "--no-against", "--state-layout", "k-last", "--dry-run", *CPU
    )
    assert_usage_error(result, "--state-layout", "softmax:kvcache")


def test_a_pool_without_a_slot_per_draft_for_kda_fla_recurrent_is_refused(invoke: Invoke) -> None:
    """Refused while the run is planned, whether or not fla can run here."""
    args = ("--variant", "kda:fla-recurrent", "--variant", "kda:recurrent", "--no-against", "--batch", "4")
    result = invoke("decode", *args, "--pool", "6", "--tokens-per-step", "2", "--context", "16", "--dry-run", *CPU)
    assert_usage_error(result, "kda:fla-recurrent", "pool ≥ batch × tokens per step = 8")


def test_each_state_layout_is_a_point_of_its_own(invoke: Invoke, tmp_path: Path) -> None:
    """v-last and k-last pools of the same decoder: two rows, the same bytes a request, each
    through the correctness gate; a KV cache gets no layout point."""
    args = ("--variant", "kda:recurrent", "--against", "softmax:kvcache", "--batch", "2", "--context", "8")
    result = invoke("decode", *args, "--state-layout", "v-last,k-last", *TINY, "--out", tmp_path)
    assert result.exit_code == 0, result.output
    rows = {(r["impl"], r["state_layout"]): r for r in _rows(tmp_path)}
    assert set(rows) == {("recurrent", "v-last"), ("recurrent", "k-last"), ("kvcache", "")}
    assert all(row["status"] == "ok" for row in rows.values()), rows
    v_last, k_last = rows["recurrent", "v-last"], rows["recurrent", "k-last"]
    assert v_last["state_bytes_per_request"] == k_last["state_bytes_per_request"] == str(2 * 16 * 16 * 4)
