"""Nominal figures of known GPUs: what the vendor's datasheet promises, for comparison.

Memory bandwidth is the datasheet's DRAM (HBM or GDDR) figure; a device-to-device copy,
counted as bytes read plus bytes written, reaches about 80-90% of it. Matmul rates are
dense (no 2:4 sparsity): the tensor-core rate for bf16 and fp16 with fp32 accumulation,
and the plain fp32 rate without TF32, which is how PyTorch runs an fp32 matmul by default.
Sub-variants that share a name prefix are listed before it. A MIG slice has a share of
the memory system and of the SMs, so no whole-GPU figure applies to it.
"""

from __future__ import annotations

import re
from dataclasses import dataclass


@dataclass(frozen=True)
class Nominal:
    """Datasheet figures of one GPU model."""

    model: str
    memory: str  # the memory technology, as the datasheet names it
    bandwidth_gb_s: float  # 1e9 bytes/s
    tflops: dict[str, float]  # dense TFLOP/s by dtype name (fp32, bf16, fp16)

    def rate(self, dtype: str) -> float | None:
        return self.tflops.get(dtype)


def _gpu(model: str, memory: str, bandwidth_gb_s: float, tensor16: float, fp32: float) -> Nominal:
    return Nominal(model, memory, bandwidth_gb_s, {"bf16": tensor16, "fp16": tensor16, "fp32": fp32})


# (pattern matched against torch.cuda.get_device_name, figures); the first match wins.
KNOWN_GPUS: tuple[tuple[str, Nominal], ...] = (
    (r"\bH200 NVL\b", _gpu("H200 NVL", "HBM3e", 4800, 835.5, 60.0)),
    (r"\bH200\b", _gpu("H200 SXM", "HBM3e", 4800, 989.4, 66.9)),
    (r"\bH100 NVL\b", _gpu("H100 NVL", "HBM3", 3900, 835.5, 60.0)),
    (r"\bH100 PCIe\b", _gpu("H100 PCIe", "HBM2e", 2000, 756.5, 51.2)),
    (r"\bH100\b.*\bHBM3\b|\bH100 SXM", _gpu("H100 SXM", "HBM3", 3350, 989.4, 66.9)),
    (r"\bA100-SXM4-80GB\b", _gpu("A100 SXM 80GB", "HBM2e", 2039, 312.0, 19.5)),
    (r"\bA100 80GB PCIe\b|\bA100-PCIE-80GB\b", _gpu("A100 PCIe 80GB", "HBM2e", 1935, 312.0, 19.5)),
    (r"\bA100-SXM4-40GB\b|\bA100-PCIE-40GB\b", _gpu("A100 40GB", "HBM2", 1555, 312.0, 19.5)),
    (r"\bL40S\b", _gpu("L40S", "GDDR6", 864, 362.1, 91.6)),
    (r"\bL4\b", _gpu("L4", "GDDR6", 300, 121.0, 30.3)),
    (r"\bA10\b", _gpu("A10", "GDDR6", 600, 125.0, 31.2)),
    (r"\bRTX 4090\b", _gpu("RTX 4090", "GDDR6X", 1008, 165.2, 82.6)),
)


def nominal_for(device_name: str) -> Nominal | None:
    """The datasheet figures for a GPU named ``device_name``; None when unknown (or a MIG slice)."""
    if re.search(r"\bMIG\b", device_name):
        return None
    for pattern, nominal in KNOWN_GPUS:
        if re.search(pattern, device_name):
            return nominal
    return None
