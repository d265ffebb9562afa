"""plan_sweep's refusals in a script's words: the request's fields, where the command line's
messages name its options (CPU; sweeps planned, nothing runs)."""

from __future__ import annotations

import pytest

from linbench import SweepRequest, plan_sweep
from linbench.runner.sweeps import in_python_words
from linbench.sweep.spec import SpecError

CPU = {"device": "cpu", "heads": 2, "dim": 16}


@pytest.mark.parametrize(
    ("request_", "said"),
    [
        (SweepRequest(no_against=True, against=("softmax",), seq=64, **CPU), "no_against and against contradict"),
        (SweepRequest(tp=2, seq=64, **CPU), "give it with preset"),
        (SweepRequest(preset="qwen3.5", **CPU), "did you mean qwen3.5-397b or qwen3.5-35b?"),
        (
            SweepRequest(
                command="decode",
                variants=("softmax:kvcache",),
                no_against=True,
                state_dtype=("bf16",),
                context=64,
                **CPU,
            ),
            "state_dtype: softmax:kvcache keep keys and values in the compute dtype; use dtypes",
        ),
        (
            SweepRequest(
                variants=("cosine:chunked",), chunk=32, params=("cosine:chunked.chunk_size=64",), seq=64, **CPU
            ),
            "chunk and params ...chunk_size= both set the chunk size",
        ),
    ],
)
def test_a_refusal_names_the_request_s_fields_not_the_command_line_s_options(request_: SweepRequest, said: str) -> None:
    with pytest.raises(ValueError) as caught:
        plan_sweep(request_)
    assert said in str(caught.value) and "--" not in str(caught.value), str(caught.value)


def test_the_words_keep_the_error_s_type_and_leave_other_text_alone() -> None:
    with pytest.raises(SpecError):
        plan_sweep(SweepRequest(tp=2, seq=64, **CPU))
    assert (
        in_python_words("--kv-heads 3 and --variant x; pass --yes or --mix")
        == "kv_heads 3 and variants x; pass yes=True or mix=True"
    )
    assert in_python_words("a--b, --unknown-flag, ranges 1k..2k") == "a--b, --unknown-flag, ranges 1k..2k"
