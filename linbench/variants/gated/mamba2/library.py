"""mamba-ssm (state-spaces/mamba) as a library: its Triton SSD kernels, imported without the
rest of the package, and whether they can run on a device.

``import mamba_ssm`` runs the package's ``__init__``, which imports the CUDA selective scan
(``selective_scan_cuda``, absent from a build made with MAMBA_SKIP_CUDA_BUILD=TRUE) and the
model classes (which need transformers and huggingface_hub). The SSD path Mamba2 runs,
``mamba_ssm.ops.triton.ssd_combined`` and ``selective_state_update``, needs neither: only
torch, triton, einops and packaging (checked on mamba-ssm 2.3.2.post1). So linbench registers
the package's module without running its ``__init__`` (nothing on disk changes) and imports
the two Triton modules from it, unless a full ``mamba_ssm`` is already imported.

On a CPU under Triton's interpreter (``TRITON_INTERPRET=1``) the kernels run too, with fla's
two bridges (feature_forms/triton_interpreter.py) and two more for mamba-ssm's launch code,
for the process: it enters ``torch.cuda.device(x.device.index)`` around each launch,
and a CPU tensor's index is None, which a CPU build of torch refuses (a no-op context then);
its backward reads ``torch.cuda.get_device_properties(x.device).multi_processor_count`` to
split a reduction over heads (132, an H100's count, so the split is an H100's; the result
does not depend on it).
"""

from __future__ import annotations

import importlib
import importlib.metadata
import importlib.util
import sys
import types
from typing import Any

import torch

from linbench.variants.feature_forms.triton_interpreter import bridge_interpreter, interpreter_on

DISTRIBUTION = "mamba-ssm"
INSTALL_HINT = "MAMBA_SKIP_CUDA_BUILD=TRUE MAMBA_FORCE_BUILD=TRUE pip install --no-build-isolation --no-deps mamba-ssm"
# The versions linbench's adapter was written and checked against (its kernels' signatures).
TESTED_RANGE = ("2.2", "2.3")
SSD_MODULE = "mamba_ssm.ops.triton.ssd_combined"
STEP_MODULE = "mamba_ssm.ops.triton.selective_state_update"
# An H100's streaming multiprocessors: what the interpreted backward is told it splits over.
_INTERPRETED_SM_COUNT = 132
_bridged = False


def version() -> str | None:
    """The installed mamba-ssm's version, or None."""
    try:
        return importlib.metadata.version(DISTRIBUTION)
    except importlib.metadata.PackageNotFoundError:
        return None


def _register_package() -> None:
    """``mamba_ssm`` in sys.modules as its package, its ``__init__`` not run (see above)."""
    if "mamba_ssm" in sys.modules:
        return
    spec = importlib.util.find_spec("mamba_ssm")
    if spec is None or spec.submodule_search_locations is None:
        raise ImportError(f"mamba-ssm is not installed ({INSTALL_HINT})")
    package = types.ModuleType("mamba_ssm")
    package.__path__ = list(spec.submodule_search_locations)
    package.__spec__ = spec
    sys.modules["mamba_ssm"] = package


def import_kernels(module: str) -> Any:
    """``module`` (SSD_MODULE or STEP_MODULE), with the interpreter bridged when it is on."""
    bridge_interpreter()
    _bridge_launches()
    _register_package()
    return importlib.import_module(module)


def unavailable(device: torch.device) -> str | None:
    """Why mamba-ssm's kernels cannot run on ``device``, or None."""
    installed = version()
    if installed is None:
        return f"mamba-ssm is not installed ({INSTALL_HINT}); its Triton kernels also need a CUDA GPU"
    if not installed.startswith(TESTED_RANGE):
        return f"mamba-ssm {installed} is installed; linbench's adapter is written for {', '.join(TESTED_RANGE)}.x"
    if importlib.util.find_spec("triton") is None:
        return "mamba-ssm's SSD kernels are Triton kernels, and Triton is not installed"
    if device.type == "cpu" and not interpreter_on():
        return "mamba-ssm's kernels are Triton kernels and need a CUDA GPU (on a CPU: TRITON_INTERPRET=1)"
    if device.type not in ("cpu", "cuda"):
        return f"mamba-ssm's kernels need a CUDA GPU, not {device.type}"
    try:
        import_kernels(SSD_MODULE)
        import_kernels(STEP_MODULE)
    except Exception as exc:  # a broken install says why, in list, instead of crashing a run
        return f"mamba-ssm's SSD kernels cannot be imported: {' '.join(str(exc).split())[:200]}"
    return None


class _NoDevice:
    """``torch.cuda.device(None)``: nothing to switch to (a CPU tensor's index)."""

    def __enter__(self) -> None:
        return None

    def __exit__(self, *exc: object) -> None:
        return None


def _bridge_launches() -> None:
    """The two launch gaps bridged for this process (once; only with the interpreter on).
    Each stand-in answers only the calls that would raise on a CPU build of torch (an index
    None, a CPU device) and hands every other call to torch's own function; process-wide,
    because the kernels' backward runs later, from autograd."""
    global _bridged
    if _bridged or not interpreter_on():
        return
    cuda_device, properties = torch.cuda.device, torch.cuda.get_device_properties

    def device_or_none(index: Any) -> Any:
        return _NoDevice() if index is None else cuda_device(index)

    def cpu_properties(where: Any = None) -> Any:
        if isinstance(where, torch.device) and where.type == "cpu":
            return types.SimpleNamespace(multi_processor_count=_INTERPRETED_SM_COUNT)
        return properties(where)

    torch.cuda.device, torch.cuda.get_device_properties = device_or_none, cpu_properties  # type: ignore[assignment,misc]
    _bridged = True


def backend_name(kernel: str, device: torch.device) -> str:
    """results.csv's ``backend`` for mamba-ssm's Triton ``kernel``."""
    interpreted = " (interpreted)" if device.type == "cpu" and interpreter_on() else ""
    return f"mamba-ssm-triton{interpreted} {kernel}"
