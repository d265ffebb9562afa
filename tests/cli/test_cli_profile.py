"""``linbench profile``: no ncu is one line and exit 2; with one, the report and the summary go to
the folder (CPU: a stand-in ncu that records how it was called and answers the summary's CSV)."""

from __future__ import annotations

import stat
from pathlib import Path

import pytest
from cli_helpers import Invoke

from linbench.measure import ncu as ncu_module

CSV = (
    '"ID","Process ID","Kernel Name","gpu__time_duration.sum","dram__throughput.avg.pct_of_peak_sustained_elapsed",'
    '"sm__throughput.avg.pct_of_peak_sustained_elapsed","sm__warps_active.avg.pct_of_peak_sustained_active"\n'
    '"","","","nsecond","%","%","%"\n"0","1","chunk_fwd_kernel_o","2500","70.1","30.2","45.0"\n'
)


def test_without_ncu_it_says_so_in_one_line(invoke: Invoke, monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    monkeypatch.setattr(ncu_module, "find_ncu", lambda: None)
    result = invoke("profile", "--variant", "gated-deltanet:fla", "--out", tmp_path)
    assert result.exit_code == 2
    assert result.stderr.strip().splitlines() == [f"linbench: error: {ncu_module.MISSING_NCU}"]


def test_the_report_and_its_summary_go_to_the_folder(
    invoke: Invoke, monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    calls = tmp_path / "calls.txt"
    fake = tmp_path / "ncu"
    fake.write_text(
        f"#!/bin/sh\necho \"$@\" >> {calls}\ncase \"$*\" in *--import*) printf '%s' '{CSV}';; *) : ;; esac\n"
    )
    fake.chmod(fake.stat().st_mode | stat.S_IEXEC)
    monkeypatch.setattr(ncu_module, "find_ncu", lambda: str(fake))
    out = tmp_path / "run"
    result = invoke("profile", "--variant", "kda:fla", "--seq", 1024, "--out", out, "--set", "source")
    assert result.exit_code == 0, result.output
    profiled, summarised = calls.read_text().splitlines()
    assert "--import" in summarised and "--print-units base" in summarised
    assert (
        "--profile-from-start off --clock-control none --set source" in profiled
        and "linbench.runner.profile_call" in profiled
    )
    assert "--variant kda --impl fla" in profiled and "--seq 1024" in profiled
    (summary,) = out.glob("*.summary.csv")
    assert summary.read_text().splitlines()[1] == "chunk_fwd_kernel_o,2.5,70.1,30.2,45.0"
    assert "chunk_fwd_kernel_o: 2.5 µs, DRAM 70.1%" in result.stdout


def test_an_impl_must_be_named(invoke: Invoke, tmp_path: Path) -> None:
    result = invoke("profile", "--variant", "kda", "--out", tmp_path)
    assert result.exit_code == 2 and "VARIANT:IMPL" in result.stderr


@pytest.mark.parametrize(
    ("args", "words"),
    [
        (("--variant", "cosine:nosuch"), "has no impl 'nosuch'"),
        (("--variant", "cosine:chunked", "--seq", "0"), "--seq"),
        (("--variant", "cosine:chunked", "--dtype", "fp8"), "unknown dtype 'fp8'"),
    ],
)
def test_bad_input_is_refused_before_ncu_starts(
    invoke: Invoke, monkeypatch: pytest.MonkeyPatch, tmp_path: Path, args: tuple[str, ...], words: str
) -> None:
    """Defect: each went to ncu, which failed minutes later: exit 1, "ncu exited 1"."""
    started: list[str] = []
    monkeypatch.setattr(ncu_module, "find_ncu", lambda: started.append("ncu") or "/bin/false")
    result = invoke("profile", *args, "--out", tmp_path)
    assert result.exit_code == 2 and words in result.stderr and started == []


def test_an_out_that_is_a_file_is_refused(invoke: Invoke, tmp_path: Path) -> None:
    """Defect: it ended in a FileExistsError traceback."""
    taken = tmp_path / "a-file"
    taken.write_text("")
    result = invoke("profile", "--variant", "cosine:chunked", "--out", taken)
    assert result.exit_code == 2 and "is a file" in result.stderr and "Traceback" not in result.output
