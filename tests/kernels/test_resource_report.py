"""csrc/cuda/resource_report.py: ptxas's report read back, the occupancy it allows, and the
budget compile_check.sh holds the fast pass to, from canned ptxas output (device: cpu; no
compiler, no torch)."""

from __future__ import annotations

import importlib.util
import sys
from pathlib import Path
from types import ModuleType

SCRIPT = Path(__file__).parents[2] / "csrc" / "cuda" / "resource_report.py"


def _load() -> ModuleType:
    """The script as a module (it lives beside the CUDA sources, outside the package)."""
    spec = importlib.util.spec_from_file_location("resource_report", SCRIPT)
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = module  # its dataclasses look their module up while being made
    spec.loader.exec_module(module)
    return module


report = _load()


PLAIN_64 = "_ZN8linbench11cuda_detail18fast_output_kernelI13__nv_bfloat16Li64ELb0EEEvNS0_8FastArgsE"


def ptxas(mangled: str, arch: str, registers: int, spills: int = 0) -> str:
    return (
        f"ptxas info    : Compiling entry function '{mangled}' for '{arch}'\n"
        f"ptxas info    : Function properties for {mangled}\n"
        f"    {spills} bytes stack frame, {spills} bytes spill stores, {spills} bytes spill loads\n"
        f"ptxas info    : Used {registers} registers, used 1 barriers, 720 bytes cmem[0]\n"
    )


def test_ptxas_output_is_read_per_kernel_and_architecture() -> None:
    generic = "_ZN8linbench11cuda_detail60_GLOBAL__N__x_31linear_attention_forward_kernelI6__halfEEvNS0_10KernelArgsE"
    text = ptxas(PLAIN_64, "sm_90", 128) + ptxas(generic, "sm_80", 126, 24) + ptxas("_Z5otherv", "sm_90", 10)
    uses = report.parse_ptxas(text)
    assert [(u.kernel, u.arch, u.registers, u.spill_stores) for u in uses] == [
        ("fast output <bf16, 64, plain>", "sm_90", 128, 0),
        ("generic forward <fp16>", "sm_80", 126, 24),
    ]


def test_occupancy_follows_registers_and_shared_memory() -> None:
    smem = report.fast_smem(64, False)
    assert smem == 48 * 1024
    assert report.occupancy("sm_90", 128, 128, smem) == (4, "registers and shared memory")
    assert report.occupancy("sm_80", 128, 128, smem)[0] == 3  # 164 KiB hold three 49 KiB blocks
    assert report.occupancy("sm_90", 255, 128, 80 * 1024)[0] == 2
    assert report.fast_smem(64, False, fp16=True) == 48 * 1024 + 128  # the copies' scales


def test_a_fast_kernel_over_its_register_budget_fails_the_check() -> None:
    """What compile_check.sh fails on: the plain kernel at 64 under 16 warps an sm_90 SM (168
    registers: 3 blocks), or any fast kernel spilling on sm_90."""
    assert report.failures(report.parse_ptxas(ptxas(PLAIN_64, "sm_90", 128))) == []
    over = report.failures(report.parse_ptxas(ptxas(PLAIN_64, "sm_90", 168)))
    assert over == ["fast output <bf16, 64, plain> on sm_90: 3 blocks an SM, under 16 warps"]
    spilling = report.failures(report.parse_ptxas(ptxas(PLAIN_64, "sm_90", 128, spills=40)))
    assert spilling == ["fast output <bf16, 64, plain> on sm_90 spills 40 / 40 bytes"]


def test_the_model_at_the_standard_point_plans_nine_segments() -> None:
    """plan_fast_segments at T: 64 row blocks for 528 slots, so 9 segments of 29 chunks, 576 blocks;
    the output launch reads q, k, v and writes the output once (268 MB) plus the partials."""
    launches = report.fast_launches(report.Point(), per_sm=4)
    state, output = launches["forward"]
    assert (state.blocks, output.blocks) == (576, 576)
    assert 268e6 <= output.dram <= 300e6
