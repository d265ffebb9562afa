"""What scripts/gpu/truth.sh asks of linbench and the machine before its parts.

Usage: python scripts/gpu/batch_info.py versions DEVICE      the versions, the GPU, whether fla
                                                             imports, the settings that pin it
       python scripts/gpu/batch_info.py fla-impls            every fla-core impl, heaviest first
       python scripts/gpu/batch_info.py runnable DEVICE ITEM...
                                                             of the impls named (V:I, or V for
                                                             V's backends), those that run on
                                                             DEVICE, a comma list; each one's
                                                             verdict on stderr
"""

from __future__ import annotations

import importlib.metadata
import os
import sys

import torch

from linbench.variants.registry import get_variant, list_variants

LIBRARIES = ("triton", "fla-core", "einops", "flash-attn", "flashinfer-python", "nvidia-cudnn-frontend", "flash-qla")
SETTINGS = ("FLA_DISABLE_BACKEND_DISPATCH", "FLA_FLASH_KDA", "FLA_CACHE_RESULTS", "TRITON_CACHE_DIR")
# The variants whose fla kernels compile longest, longest first: their checks start first.
HEAVY = ("kda", "gated-deltanet", "deltanet", "gla")
# A variant's forms that are not backends of it: its references, and fla's dispatch, which with
# the dispatch pinned off is fla's own kernel, timed as `fla`.
NOT_BACKENDS = {
    "recurrent": "the token-serial PyTorch reference: not a backend",
    "quadratic": "the S×S reference: not a backend",
    "fla-dispatch": "fla's dispatch, pinned off: fla's own kernel, timed as `fla`",
}


def _version(name: str) -> str:
    try:
        return importlib.metadata.version(name)
    except importlib.metadata.PackageNotFoundError:
        return "absent"


def versions(device: torch.device) -> None:
    from linbench.cli import app
    from linbench.variants.feature_forms.fla import fla_unavailable

    found = "; ".join(f"{name} {_version(name)}" for name in LIBRARIES)
    print(f"python {sys.version.split()[0]}; torch {torch.__version__} (CUDA {torch.version.cuda}); {found}")
    if device.type == "cuda":
        p = torch.cuda.get_device_properties(0)
        print(f"{p.name}: sm_{p.major}{p.minor}, {p.multi_processor_count} SMs, {p.total_memory / 2**30:.1f} GiB")
    print("fla's impls here:", fla_unavailable(device) or "importable and runnable")
    print("env:", " ".join(f"{key}={os.environ.get(key, '')}" for key in SETTINGS))
    print("linbench warm:", "yes" if any(c.name == "warm" for c in app.registered_commands) else "no")


def fla_impls() -> None:
    picks = [(v, i) for v in list_variants() for i, impl in get_variant(v).impls.items() if impl.library == "fla-core"]
    rank = {variant: place for place, variant in enumerate(HEAVY)}
    picks.sort(key=lambda pick: (pick[1] == "fla-recurrent", rank.get(pick[0], len(HEAVY))))
    print(" ".join(f"{v}:{i}" for v, i in picks))


def runnable(device: torch.device, items: list[str]) -> None:
    runs = []
    for item in items:
        variant, _, named = item.partition(":")
        impls = get_variant(variant).impls
        for name in [named] if named else list(impls):
            reason = (None if named else NOT_BACKENDS.get(name)) or impls[name].unavailable_reason(device)
            print(f"  {variant}:{name}: {reason or 'runs here'}", file=sys.stderr)
            runs += [] if reason else [f"{variant}:{name}"]
    print(",".join(runs))


if __name__ == "__main__":
    command = sys.argv[1] if len(sys.argv) > 1 else ""
    if command == "versions" and len(sys.argv) == 3:
        versions(torch.device(sys.argv[2]))
    elif command == "fla-impls" and len(sys.argv) == 2:
        fla_impls()
    elif command == "runnable" and len(sys.argv) > 3:
        runnable(torch.device(sys.argv[2]), sys.argv[3:])
    else:
        print(__doc__, file=sys.stderr)
        sys.exit(2)
