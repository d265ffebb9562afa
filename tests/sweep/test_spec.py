"""Sweep settings: defaults, suites, [[sweep]] tables and command-line overrides."""

from __future__ import annotations

from pathlib import Path

import pytest

from linbench.sweep.request import SweepRequest
from linbench.sweep.spec import SpecError, build_spec, spec_from_settings


def write(tmp_path: Path, text: str) -> Path:
    path = tmp_path / "suite.toml"
    path.write_text(text)
    return path


def test_defaults_are_the_documented_ones() -> None:
    spec = build_spec(SweepRequest())
    (block,) = spec.blocks
    assert block.seq == (1024, 2048, 4096, 8192, 16384)
    assert (block.batch, block.heads, block.dim, block.dim_v) == ((1,), (8,), (64,), None)
    assert (block.dtype, block.mode, block.causal) == (("fp32",), ("fwd",), (True,))
    assert spec.baselines == ("softmax",)
    assert block.dims() == [(64, 64)]


@pytest.mark.parametrize(
    ("variants", "name"),
    [
        (("cosine,linear",), "cosine+linear"),
        (("cosine:chunked", "softmax:sdpa"), "cosine-chunked+softmax-sdpa"),
        (("cosine:chunked, linear",), "cosine-chunked+linear"),
        (("../up",), "up"),
    ],
)
def test_the_folder_name_is_made_of_safe_characters(variants: tuple[str, ...], name: str) -> None:
    """--variant a,b once named its run folder ...-a,b; a comma is no character for a path."""
    assert build_spec(SweepRequest(variants=variants)).name == name


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
    spec = build_spec(SweepRequest(suite=suite, dtypes=("bf16",)))
    assert [b.seq for b in spec.blocks] == [(1024, 2048, 4096), (2048,)]
    assert [b.dim for b in spec.blocks] == [(64,), (32, 64, 128)]
    assert all(b.dtype == ("bf16",) for b in spec.blocks)
    assert spec.name == "suite"
    overridden = build_spec(SweepRequest(suite=suite, seq="512"))
    assert [b.seq for b in overridden.blocks] == [(512,), (512,)]


def test_dim_v_is_crossed_with_dim() -> None:
    (block,) = build_spec(SweepRequest(dim="32,64", dim_v="16")).blocks
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
        # inf crashed a run after its folder was made (a poll in whole ms), and meta.json holds no inf
        ({"timeout_s": float("inf")}, "timeout_s: inf must be at most 1e\\+06 seconds"),
        ({"timeout_s": 3e6}, "timeout_s: 3000000.0 must be at most"),
        ({"budget_s": float("nan")}, "budget_s: nan must be positive"),
        ({"variant": [""]}, "no variant"),
    ],
)
def test_bad_settings_name_the_setting(flags: dict, message: str) -> None:
    with pytest.raises(SpecError, match=message):
        build_spec(SweepRequest.from_settings(flags))


@pytest.mark.parametrize(
    ("text", "message"),
    [
        ("seq = [", "not valid TOML"),
        ("sequence = 4", "unknown key"),
        ("[[sweep]]\nvariant = 'cosine'", "unknown key"),
        ("skip = 'cosine'", "unknown key"),
        ("sweep = 3", "array of tables"),
        # a string is no flag: "false" read as true measured without baselines
        ("no_against = 'false'", "no_against: 'false' is not true or false"),
        # the run folder's name: it once made a folder outside --out
        ("name = '../../esc'", "name: '../../esc' must be one folder name"),
        ("name = '..'", "must be one folder name"),
        ("plugin = 3", "plugin must be a path or a list of paths; got 3"),  # a TypeError traceback
        # a string was dropped by compare (no drift check); a bad name failed every compare after
        ("controls = 'softmax:sdpa'", "controls must be a list of VARIANT:IMPL"),
        ("controls = ['nosuch']", "controls must be a list of VARIANT:IMPL"),
    ],
)
def test_malformed_suites_are_refused(tmp_path: Path, text: str, message: str) -> None:
    with pytest.raises(SpecError, match=message):
        build_spec(SweepRequest(suite=write(tmp_path, text)))


def test_a_missing_suite_is_named(tmp_path: Path) -> None:
    with pytest.raises(SpecError, match="does not exist"):
        build_spec(SweepRequest(suite=tmp_path / "nope.toml"))


def test_plugin_paths_in_a_suite_are_relative_to_it(tmp_path: Path) -> None:
    spec = build_spec(SweepRequest(suite=write(tmp_path, "plugin = 'mine.py'")))
    assert spec.plugins == (str(tmp_path / "mine.py"),)


def test_settings_round_trip_for_resume(tmp_path: Path) -> None:
    spec = build_spec(SweepRequest(seq="1k,2k", modes=("fwd", "bwd")))
    again = spec_from_settings(spec.settings, spec.settings["sweep"], name=spec.name, suite=None)
    assert again.blocks == spec.blocks
    assert (again.variants, again.baselines) == (spec.variants, spec.baselines)


def test_decode_defaults_are_the_documented_ones() -> None:
    spec = build_spec(SweepRequest(command="decode"))
    (block,) = spec.blocks
    assert block.seq == (1024, 2048, 4096, 8192, 16384, 32768, 65536)
    assert (block.mode, block.causal, block.dtype) == (("decode",), (True,), ("fp32",))
    assert (spec.command, spec.tokens, spec.baselines) == ("decode", 32, ("softmax",))


def test_a_context_up_to_a_million_tokens_is_accepted() -> None:
    (block,) = build_spec(SweepRequest(command="decode", context="1k..1m", tokens="8")).blocks
    assert block.seq[-1] == 1_048_576 and len(block.seq) == 11


def test_a_decode_suite_takes_context_and_tokens(tmp_path: Path) -> None:
    suite = write(
        tmp_path,
        """
        command = "decode"
        variant = ["cosine:recurrent"]
        tokens = 16
        [[sweep]]
        context = "1k..4k"
        [[sweep]]
        context = 2048
        heads = "4,16"
        """,
    )
    spec = build_spec(SweepRequest(suite=suite, command="decode"))
    assert [b.seq for b in spec.blocks] == [(1024, 2048, 4096), (2048,)]
    assert spec.tokens == 16 and spec.blocks[1].heads == (4, 16)
    again = spec_from_settings(spec.settings, spec.settings["sweep"], name=spec.name, suite=None, command="decode")
    assert again.blocks == spec.blocks and again.tokens == 16


@pytest.mark.parametrize(
    ("text", "command", "message"),
    [
        ('command = "decode"', "run", "is a decode suite; run it with linbench decode --suite"),
        ("seq = 1024", "decode", "is a run suite; run it with linbench run --suite"),
        ('command = "decode"\nseq = 1024', "decode", r"unknown key\(s\) seq"),
        ('command = "decode"\n[[sweep]]\nmode = "fwd"', "decode", r"unknown key\(s\) mode"),
        ('command = "train"', "run", "command 'train' is not one of run, decode"),
    ],
)
def test_a_suite_is_read_by_its_own_command_only(tmp_path: Path, text: str, command: str, message: str) -> None:
    with pytest.raises(SpecError, match=message):
        build_spec(SweepRequest(suite=write(tmp_path, text), command=command))


@pytest.mark.parametrize(
    ("flags", "message"),
    [
        ({"context": "0"}, "context: '0' is not a positive size"),
        ({"context": "4k..1k"}, "context: range '4k..1k' is reversed"),
        ({"tokens": "0"}, "tokens:"),
        ({"tokens": "4,8"}, "tokens: give one number"),
        ({"seq": "1k"}, "unknown setting"),
    ],
)
def test_bad_decode_settings_name_the_setting(flags: dict, message: str) -> None:
    with pytest.raises(SpecError, match=message):
        build_spec(SweepRequest.from_settings(flags, command="decode"))
