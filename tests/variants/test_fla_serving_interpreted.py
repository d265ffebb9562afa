"""fla's ``fla-recurrent`` decoders served on the CPU under Triton's interpreter: kda's and gdn2's
kernels take the pool and the slots themselves (fla's ssm_state_indices, num_accepted_tokens,
inplace_final_state), gated-deltanet's steps the states linbench gathers; all equal the fp64
forward request by request, at mixed contexts, slots scattered in a pool, T > 1 with rollback,
a bf16 pool and the k-last layout, and leave the slots no request holds untouched.

The cases run in one process of their own (tests/variants/fla_serving_interpreted.py): the
interpreter must be on before triton and fla are first imported. Skipped where fla-core or
triton is not installed. About 10 s of CPU for the set, in one process, on the 2-core development machine (the
first case pays the interpreter's start), so it is marked slow.
"""

from __future__ import annotations

import importlib.util
from pathlib import Path
from typing import Any

import pytest
from interpreted_cases import run_interpreted

SCRIPT = Path(__file__).with_name("fla_serving_interpreted.py")
MISSING = [name for name in ("fla", "triton") if importlib.util.find_spec(name) is None]
pytestmark = [
    pytest.mark.skipif(bool(MISSING), reason=f"not installed: {', '.join(MISSING)} (pip install -e '.[fla-cpu]')"),
    pytest.mark.slow,
]
# fp32 inputs and fp32 compute in fla's kernel, against fp64; a bf16 pool rounds the state each step.
FP32_TOLERANCE, BF16_TOLERANCE = 1e-5, 2e-2


@pytest.fixture(scope="module")
def cases() -> dict[str, dict[str, Any]]:
    """Every case, in one process (the interpreter's start is paid once)."""
    return _run()


def _run(*args: str) -> dict[str, dict[str, Any]]:
    """The script's cases by name, run on the CPU under the interpreter."""
    return run_interpreted(SCRIPT, *args)


def test_fla_decoders_served_equal_the_fp64_forward_request_by_request_interpreted(
    cases: dict[str, dict[str, Any]],
) -> None:
    assert set(cases) == {
        "kda T1",
        "kda T3 rate",
        "kda T3 rate k-last",
        "kda T2 bf16 pool",
        "gated-deltanet T3 rate",
        "gated-deltanet T2 k-last",
        "gdn2 T3 rate k-last",
        "rwkv7 T2 rate",
        "planted",
        "workload",
        "gated-deltanet plain",
        "kda plain",
        "gated-deltanet served gate HV4",
        "kda served gate HV4",
        "gdn2 plain",
        "rwkv7 plain",
    }
    served = {name: case for name, case in cases.items() if "max_error" in case and name != "planted"}
    for name, case in served.items():
        tolerance = BF16_TOLERANCE if "bf16" in name else FP32_TOLERANCE
        assert case["max_error"] < tolerance, (name, case)
        assert case["untouched"], name
    # kda's and gdn2's kernels took the pool; gated-deltanet's (no state indices in fla-core 0.6) did not.
    assert cases["kda T3 rate"]["backend"] == "fla-triton (interpreted) fused_recurrent_kda_fwd pooled"
    assert cases["gdn2 T3 rate k-last"]["backend"] == "fla-triton (interpreted) fused_recurrent_gdn2_fwd pooled"
    assert cases["gated-deltanet T3 rate"]["backend"].endswith(
        "fused_recurrent_gated_delta_rule (pool gathered by linbench)"
    )
    assert cases["rwkv7 T2 rate"]["backend"].endswith("fused_recurrent_rwkv7 (pool gathered by linbench)")


def test_a_served_point_of_kda_fla_recurrent_holds_t_slots_a_request_in_its_own_layout_and_dtype(
    cases: dict[str, dict[str, Any]],
) -> None:
    """As ``linbench decode --variant kda:fla-recurrent --tokens-per-step 2 --state-dtype bf16
    --state-layout k-last`` measures it: 3 requests × 2 slots, each (H, Dv, Dk) in bf16; the
    drift read against linbench's fp64 recurrence (fla has no fp64); each rotating step a CUDA
    graph would capture writes its own pool alone."""
    case = cases["workload"]
    assert case["slots"] == 6 and case["pool_shape"] == [6, 2, 8, 8] and case["pool_dtype"] == "torch.bfloat16"
    assert case["state_bytes_per_request"] == 2 * 2 * 8 * 8 * 2  # two slots of H2 8×8 bf16
    assert 0 < case["state_drift"] < 2e-2
    assert case["copy_left_own_pool"] and case["own_step_wrote_slots"]
    assert case["backend"] == "fla-triton (interpreted) fused_recurrent_kda_fwd pooled"


@pytest.mark.parametrize("name", ["gated-deltanet plain", "kda plain"])
def test_each_fla_decoder_passes_decode_s_correctness_gate(cases: dict[str, dict[str, Any]], name: str) -> None:
    """Unserved, as ``linbench decode`` gates a point: a prefill through fla's kernel, then 4
    steps, against the fp64 reference's last rows."""
    assert cases[name]["ok"], cases[name]["failed"]


@pytest.mark.parametrize("name", ["gated-deltanet served gate HV4", "kda served gate HV4"])
def test_each_fla_decoder_served_with_more_value_heads_passes_the_served_gate(
    cases: dict[str, dict[str, Any]], name: str
) -> None:
    """Served with 4 value heads for 2 q/k heads (kda's kernel handed the pool), T = 2: one
    output head per value head, each request's tokens equal to the fp64 reference."""
    assert cases[name]["ok"], cases[name]["failed"]
    assert "pooled" in cases[name]["backend"] if name.startswith("kda") else "gathered" in cases[name]["backend"]


def test_a_step_that_reads_a_stale_slot_is_caught(cases: dict[str, dict[str, Any]]) -> None:
    """Told each request kept one token fewer, kda's kernel starts the next step from a draft's
    predecessor: the outputs leave the fp64 forward."""
    assert cases["planted"]["max_error"] > 100 * FP32_TOLERANCE
