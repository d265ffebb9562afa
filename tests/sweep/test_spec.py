"""Sweep settings: defaults, suites, [[sweep]] tables and command-line overrides."""

from __future__ import annotations

from pathlib import Path

import pytest

from linbench.sweep.spec import SpecError, build_spec, spec_from_settings


def write(tmp_path: Path, text: str) -> Path:
    path = tmp_path / "suite.toml"
    path.write_text(text)
    return path


def test_defaults_are_the_documented_ones() -> None:
    spec = build_spec({})
    (block,) = spec.blocks
    assert block.seq == (1024, 2048, 4096, 8192, 16384)
    assert (block.batch, block.heads, block.dim, block.dim_v) == ((1,), (8,), (64,), None)
    assert (block.dtype, block.mode, block.causal) == (("fp32",), ("fwd",), (True,))
    assert spec.baselines == ("softmax",)
    assert block.dims() == [(64, 64)]


def test_flags_override_a_suite_and_its_tables(tmp_path: Path) -> None:
    suite = write(
        tmp_path,
        """
        variant = ["cosine"]
        dtype = "fp32"
        [[sweep]]
        seq = "1k..4k"
        dim = 64
        [[sweep]]
        seq = 2048
        dim = "32..128"
        """,
    )
    spec = build_spec({"dtype": ["bf16"]}, suite)
    assert [b.seq for b in spec.blocks] == [(1024, 2048, 4096), (2048,)]
    assert [b.dim for b in spec.blocks] == [(64,), (32, 64, 128)]
    assert all(b.dtype == ("bf16",) for b in spec.blocks)
    assert spec.name == "suite"
    overridden = build_spec({"seq": "512"}, suite)
    assert [b.seq for b in overridden.blocks] == [(512,), (512,)]


def test_dim_v_is_crossed_with_dim() -> None:
    (block,) = build_spec({"dim": "32,64", "dim_v": "16"}).blocks
    assert block.dims() == [(32, 16), (64, 16)]


@pytest.mark.parametrize(
    ("flags", "message"),
    [
        ({"seq": "64k..1k"}, "seq: range '64k..1k' is reversed"),
        ({"batch": "0"}, "batch:"),
        ({"heads": "x"}, "heads:"),
        ({"dtype": ["fp8"]}, "unknown dtype 'fp8'"),
        ({"mode": ["forward"]}, "unknown mode 'forward'"),
        ({"causal": "sometimes"}, "causal:"),
        ({"timeout_s": -1}, "timeout_s"),
        ({"variant": [""]}, "no variant"),
    ],
)
def test_bad_settings_name_the_setting(flags: dict, message: str) -> None:
    with pytest.raises(SpecError, match=message):
        build_spec(flags)


@pytest.mark.parametrize(
    ("text", "message"),
    [
        ("seq = [", "not valid TOML"),
        ("sequence = 4", "unknown key"),
        ("[[sweep]]\nvariant = 'cosine'", "unknown key"),
        ("sweep = 3", "array of tables"),
    ],
)
def test_malformed_suites_are_refused(tmp_path: Path, text: str, message: str) -> None:
    with pytest.raises(SpecError, match=message):
        build_spec({}, write(tmp_path, text))


def test_a_missing_suite_is_named(tmp_path: Path) -> None:
    with pytest.raises(SpecError, match="does not exist"):
        build_spec({}, tmp_path / "nope.toml")


def test_plugin_paths_in_a_suite_are_relative_to_it(tmp_path: Path) -> None:
    spec = build_spec({}, write(tmp_path, "plugin = 'mine.py'"))
    assert spec.plugins == (str(tmp_path / "mine.py"),)


def test_settings_round_trip_for_resume(tmp_path: Path) -> None:
    spec = build_spec({"seq": "1k,2k", "mode": ["fwd", "bwd"]})
    again = spec_from_settings(spec.settings, spec.settings["sweep"], name=spec.name, suite=None)
    assert again.blocks == spec.blocks
    assert (again.variants, again.baselines) == (spec.variants, spec.baselines)
