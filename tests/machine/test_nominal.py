"""The datasheet figures of known GPUs (no device involved)."""

from __future__ import annotations

import pytest

from linbench.machine.nominal import nominal_for


@pytest.mark.parametrize(
    ("name", "model", "bandwidth", "bf16", "fp32"),
    [
        ("NVIDIA H100 80GB HBM3", "H100 SXM", 3350, 989.4, 66.9),
        ("NVIDIA H100 PCIe", "H100 PCIe", 2000, 756.5, 51.2),
        ("NVIDIA H100 NVL", "H100 NVL", 3900, 835.5, 60.0),
        ("NVIDIA H200", "H200 SXM", 4800, 989.4, 66.9),
        ("NVIDIA H200 NVL", "H200 NVL", 4800, 835.5, 60.0),
        ("NVIDIA A100-SXM4-80GB", "A100 SXM 80GB", 2039, 312.0, 19.5),
        ("NVIDIA A100 80GB PCIe", "A100 PCIe 80GB", 1935, 312.0, 19.5),
        ("NVIDIA A100-SXM4-40GB", "A100 40GB", 1555, 312.0, 19.5),
        ("NVIDIA L4", "L4", 300, 121.0, 30.3),
        ("NVIDIA L40S", "L40S", 864, 362.1, 91.6),
    ],
)
def test_known_gpus_have_their_datasheet_figures(
    name: str, model: str, bandwidth: float, bf16: float, fp32: float
) -> None:
    nominal = nominal_for(name)
    assert nominal is not None and nominal.model == model
    assert nominal.bandwidth_gb_s == bandwidth
    assert nominal.rate("bf16") == bf16 == nominal.rate("fp16")
    assert nominal.rate("fp32") == fp32
    assert nominal.rate("fp64") is None


@pytest.mark.parametrize(
    "name", ["NVIDIA GeForce GTX 1080", "Tesla T4", "NVIDIA H100 80GB HBM3 MIG 1g.10gb", "AMD EPYC"]
)
def test_unknown_gpus_and_mig_slices_have_no_nominal_figure(name: str) -> None:
    assert nominal_for(name) is None
