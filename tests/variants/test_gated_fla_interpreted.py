"""fla's real Triton kernels, every fla impl of every gated family, proven on the CPU against the
fp64 reference under Triton's interpreter (TRITON_INTERPRET=1), outputs and gradients.

The cases run in one process of their own (tests/variants/fla_interpreted.py): the interpreter
must be on before triton and fla are first imported. Skipped where fla-core or triton is not
installed (``pip install -e '.[fla-cpu]'``). CI's suite runs QUICK, every family at least
once (about 16 s of CPU on the slower 2-core machine, 2026-11-28); ``--extended`` runs every case
(about 65 s there, KDA's chunk kernel the longest at 9 s: the interpreter runs each program
instance in numpy). Marked slow, so it starts first.
"""

from __future__ import annotations

import importlib.util
from pathlib import Path
from typing import Any

import pytest
from interpreted_cases import run_interpreted

SCRIPT = Path(__file__).with_name("fla_interpreted.py")
MISSING = [name for name in ("fla", "triton") if importlib.util.find_spec(name) is None]
pytestmark = [
    pytest.mark.skipif(bool(MISSING), reason=f"not installed: {', '.join(MISSING)} (pip install -e '.[fla-cpu]')"),
    pytest.mark.slow,
]
# Every case the script runs (tests/variants/fla_interpreted.py's cases()).
EXPECTED = {
    *(
        f"{name}:{kernel}"
        for name in ("retention", "lightning", "simple-gla", "gla", "deltanet", "gated-deltanet", "kda")
        for kernel in ("fla", "fla-recurrent")
    ),
    "gated-deltanet:fla-dispatch",
    "gated-deltanet:fla gqa",
    "gated-deltanet:fla value heads",
    "gated-deltanet:fla packed",
    "gla:fla packed",
    "kda:fla-recurrent packed",
    "retention:fla gamma=0.9",
    "gdn2:fla",
    "gdn2:fla-recurrent value heads",
    "rwkv7:fla",
    "rwkv7:fla-recurrent",
    *(f"{name}:fla {case}" for name in ("gdn2", "rwkv7") for case in ("initial state", "packed")),
}
# CI's share: a chunk or a fused recurrent kernel of every family (a chunk kernel, forward and
# backward, for five of them), fla's dispatch, value heads, a pack through cu_seqlens, an initial
# state and a given γ; the cases left out (kda's chunk kernel, 9 s, above all) run with --extended.
QUICK = {
    "retention:fla gamma=0.9",
    "lightning:fla",
    "simple-gla:fla",
    "gla:fla-recurrent",
    "deltanet:fla",
    "gated-deltanet:fla",
    "gated-deltanet:fla-dispatch",
    "gated-deltanet:fla value heads",
    "kda:fla-recurrent",
    "kda:fla-recurrent packed",
    "gdn2:fla-recurrent value heads",
    "rwkv7:fla initial state",
    "rwkv7:fla packed",
}


def _run(*args: str) -> dict[str, dict[str, Any]]:
    """The script's cases by name, run on the CPU under the interpreter."""
    return run_interpreted(SCRIPT, *args)


PLANTED = "gated-deltanet:fla"


def _chosen(config: pytest.Config) -> set[str]:
    """The cases this session runs: every one with --extended, else QUICK."""
    return EXPECTED if config.getoption("--extended") else QUICK


@pytest.fixture(scope="module")
def interpreted(request: pytest.FixtureRequest) -> dict[str, dict[str, Any]]:
    """The chosen cases, then PLANTED with a wrong scale, in one process (its imports of triton
    and fla, seconds of CPU, paid once; conftest.py keeps this module's tests in one worker)."""
    return _run(*sorted(_chosen(request.config)), "--then-plant-wrong-scale", PLANTED)


def test_the_quick_cases_are_cases_of_the_script_and_cover_every_family() -> None:
    assert QUICK <= EXPECTED
    families = {name.split(":")[0] for name in EXPECTED}
    assert {name.split(":")[0] for name in QUICK} == families


def test_fla_s_kernels_match_the_fp64_reference_interpreted_every_family_in_ci_every_kernel_extended(
    interpreted: dict[str, dict[str, Any]], request: pytest.FixtureRequest
) -> None:
    """fp32 (chunk_delta_rule refuses fp32 and the interpreter computes bf16 wrongly, so
    deltanet's chunk kernel runs in fp16); fla's dispatch, GQA, more value heads than q/k heads
    (fla's native GVA), packs (fla's cu_seqlens), a given γ besides the default, and gdn2's and
    rwkv7's kernels (fla/ops/gdn2, fla/ops/rwkv7) with an initial state and a pack."""
    cases = {name: case for name, case in interpreted.items() if name != f"{PLANTED} planted"}
    assert set(cases) == _chosen(request.config)
    failed = {name: case["failed"] for name, case in cases.items() if not case["ok"]}
    assert not failed, failed


def test_a_wrong_scale_handed_to_fla_fails_the_check(interpreted: dict[str, dict[str, Any]]) -> None:
    planted = interpreted[f"{PLANTED} planted"]
    assert not planted["ok"]
    assert "out err" in planted["failed"]
