"""``linbench run --dry-run``: the plan as it is printed, and what it leaves out (CPU; nothing runs)."""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import replace
from pathlib import Path

import pytest
import torch
from cli_helpers import Invoke, assert_usage_error

from linbench.variants.registry import Impl, Variant, register_variant, unregister_variant

CPU = ("--device", "cpu")
CAUSAL_ONLY = "test-run-causal-only"


def _v(q: torch.Tensor, k: torch.Tensor, v: torch.Tensor, *, causal: bool) -> torch.Tensor:
    return v + 0.0 * (q + k).sum(-1, keepdim=True)


@pytest.fixture
def causal_only() -> Iterator[str]:
    impl = Impl("ref", _v, "", "O(s)", "O(s)")
    variant = Variant(CAUSAL_ONLY, "O = V", (impl,), "ref", (), lambda *a: 0.0, "O(s)", "O(s)", masking=("causal",))
    register_variant(variant)
    yield CAUSAL_ONLY
    unregister_variant(CAUSAL_ONLY)


def test_a_causal_only_variant_with_no_point_left_is_refused_though_a_baseline_would_run(
    invoke: Invoke, causal_only: str, tmp_path: Path
) -> None:
    """The run would measure softmax:naive alone: refused, in a dry run too, naming why."""
    args = ("--variant", causal_only, "--against", "softmax:naive", "--seq", "64", "--bidirectional", *CPU)
    result = invoke("run", *args, "--out", tmp_path / "out", "--dry-run")
    assert_usage_error(result, f"nothing to run of {causal_only}: {causal_only} is causal only")
    assert not (tmp_path / "out").exists()


def test_a_sweep_of_nothing_but_a_masking_the_variant_lacks_is_refused(
    invoke: Invoke, causal_only: str, tmp_path: Path
) -> None:
    args = ("--variant", causal_only, "--no-against", "--seq", "64", "--bidirectional", *CPU)
    result = invoke("run", *args, "--out", tmp_path / "out")
    assert_usage_error(result, f"nothing to run: {causal_only} is causal only")
    assert not (tmp_path / "out").exists()


@pytest.mark.parametrize("command", ["run", "list", "check", "decode"])
def test_a_plugin_that_registers_nothing_is_one_line_naming_the_file_as_given(
    invoke: Invoke, command: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.chdir(tmp_path)
    Path("nothing.py").write_text("VARIANT = None\n")
    result = invoke(command, "--plugin", "nothing.py", *CPU)
    assert_usage_error(result, "plugin file 'nothing.py' registered no variant")
    assert not Path("results").exists()


@pytest.mark.parametrize("command", ["run", "list", "decode"])
def test_a_broken_plugin_is_named_as_given_by_every_command(
    invoke: Invoke, command: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.chdir(tmp_path)
    Path("broken.py").write_text("raise RuntimeError('planted')\n")
    assert_usage_error(invoke(command, "--plugin", "broken.py", *CPU), "plugin file 'broken.py' failed to load")


@pytest.mark.parametrize("command", ["run", "decode"])
@pytest.mark.parametrize("under", ["", "/runs"])
def test_an_out_that_is_a_file_is_refused_as_not_a_folder(
    invoke: Invoke, tmp_path: Path, command: str, under: str
) -> None:
    afile = tmp_path / "afile"
    afile.write_text("mine")
    for dry_run in ((), ("--dry-run",)):
        result = invoke(command, "--variant", "cosine", "--no-against", *CPU, "--out", f"{afile}{under}", *dry_run)
        assert_usage_error(result, f"--out {afile}{under}: {afile} is a file; --out must be a folder")
    assert afile.read_text() == "mine"


def test_dry_run_shows_the_values_of_every_axis(invoke: Invoke, tmp_path: Path) -> None:
    args = ("--variant", "cosine:chunked", "--seq", "64..256:+64", "--heads", "2,4", "--dim", "16", "--mode", "fwd,bwd")
    result = invoke("run", *args, "--dtype", "fp32,bf16", *CPU, "--out", tmp_path, "--dry-run")
    assert result.exit_code == 0, result.output
    line = next(line for line in result.stdout.splitlines() if "seq" in line and "heads" in line)
    for words in ("seq 64, 128, 192, 256", "batch 1", "heads 2, 4", "dim 16", "dtype fp32, bf16", "mode fwd, bwd"):
        assert words in line, line
    assert "causal" in line and "bidirectional" not in line


def test_dry_run_of_decode_shows_the_contexts(invoke: Invoke, tmp_path: Path) -> None:
    args = ("--variant", "cosine:recurrent", "--no-against", "--context", "1k..4k", "--tokens", "4")
    result = invoke("decode", *args, *CPU, "--out", tmp_path, "--dry-run")
    assert result.exit_code == 0, result.output
    assert "context 1k, 2k, 4k" in result.stdout


def _wrong_shape_gate(sizes: tuple[int, ...], generator: torch.Generator, regime: str) -> torch.Tensor:
    return -torch.rand((*sizes, 2), generator=generator, dtype=torch.float64)


@pytest.fixture
def wrong_gate() -> Iterator[str]:
    """A variant whose declared gate draws one axis too many (a plugin's mistake)."""
    from linbench.variants.extra_inputs import ExtraInput

    gate = ExtraInput("g", "per_token", "a gate ≤ 0", _wrong_shape_gate, lambda g: None)

    def impl(q: torch.Tensor, k: torch.Tensor, v: torch.Tensor, *, causal: bool, g: torch.Tensor) -> torch.Tensor:
        return v

    name = "test-run-wrong-gate"
    variant = Variant(
        name, "O = V", (Impl("ref", impl, "", "O(s)", "O(s)"),), "ref", (), lambda *a: 0.0, "O(s)", "O(s)"
    )
    register_variant(replace(variant, extra_inputs=(gate,)))
    yield name
    unregister_variant(name)


def test_a_gate_drawn_in_the_wrong_shape_is_refused_before_anything_runs(
    invoke: Invoke, wrong_gate: str, tmp_path: Path
) -> None:
    """CPU. One line, exit 2, no run folder: not an error row in every point."""
    result = invoke("run", "--variant", wrong_gate, "--no-against", "--seq", "64", *CPU, "--out", tmp_path / "out")
    assert_usage_error(result, f"{wrong_gate}: its draw_fn for g (weak regime) drew what it refuses: g must have shape")
    assert not (tmp_path / "out").exists()


def test_check_names_a_gate_drawn_in_the_wrong_shape_as_run_does(invoke: Invoke, wrong_gate: str) -> None:
    """CPU. The draw is the cause, not the reference that the drawn gate was handed to."""
    result = invoke("check", "--variant", wrong_gate, *CPU, "--dtype", "fp32")
    assert_usage_error(result, f"{wrong_gate}: its draw_fn for g (weak regime) drew what it refuses: g must have shape")
    assert "reference" not in result.stderr
