"""docs/libraries.md from the contract rows: ``python -m linbench.variants.libraries.docs
docs/libraries.md`` writes it; tests/variants/test_library_docs.py fails when it is stale."""

from __future__ import annotations

import sys
from pathlib import Path

from linbench.variants.libraries import CONTRACTS
from linbench.variants.libraries.contract import Contract
from linbench.variants.libraries.wrapper import summary

HEADER = """# Other kernel libraries: one contract per impl

Generated from `linbench/variants/libraries/gated.py` and `softmax.py` by
`python -m linbench.variants.libraries.docs docs/libraries.md`; a test fails when it is stale.
Each row was read from the library's source at the version it names; the impl linbench builds
from it (`linbench/variants/libraries/wrapper.py`) refuses what the row says the library cannot
take, with the reason. The words (layout, gate, beta, value heads) are defined in
`linbench/variants/libraries/contract.py`. Conversions of the gate and β other than `log` and
`as-drawn` are made once, untimed, when a point's inputs are drawn (`Impl.hold`), never inside
a timed call. None of these rows has met a GPU here: the contract tests
(`tests/variants/test_library_*.py`) run FlashInfer's, cuDNN's and FlashQLA's own Python layers
on the CPU as SM90 and SM100 with only their kernel launches stood in, and FlashKDA and cuLA
through stand-ins that quote their source.
"""


def _facts(row: Contract) -> list[tuple[str, str]]:
    dims = "/".join(map(str, row.dims)) if row.dims else f"up to {row.max_dim}, multiples of 8"
    narrower = "; ".join(
        f"SM{major}x: {'/'.join(map(str, d))}" for major, d in (*row.arch_dtypes.items(), *row.arch_dims.items())
    )
    return [
        ("entry point", f"`{row.module}.{row.entry}`" + (f", packs `{row.packed_entry}`" if row.packed_entry else "")),
        ("runs", "; ".join(f"SM{major}x: {kernel}" for major, kernel in row.kernels.items())),
        ("no kernel", "; ".join(f"SM{major}x: {why}" for major, why in row.no_kernel.items()) or "-"),
        ("layout", f"{row.layout}{', contiguous' if row.contiguous else ''}; cu_seqlens {str(row.cu_dtype)[6:]}"),
        ("packs", row.packs + (" (a pack runs padded, as a batch)" if row.packs == "none" else "")),
        ("batch", f"one sequence: {row.one_sequence}" if row.one_sequence else "any"),
        ("gate / beta", f"{row.gate} / {row.beta}" + (f"; gate floor {row.gate_floor:g}" if row.gate_floor else "")),
        ("scale", row.scale_default),
        ("value heads", row.value_heads),
        ("dtypes, head sizes", f"{'/'.join(row.dtypes)}; {dims}" + (f" ({narrower})" if narrower else "")),
        ("backward", "/".join(f"SM{m}x" for m in row.backward) or "none (forward only)"),
        ("notes", row.notes or "-"),
        ("read from", "<br>".join(row.read_from)),
    ]


def render() -> str:
    parts = [HEADER]
    for row in CONTRACTS:
        parts.append(f"\n## `{row.name}`: {row.distribution} {row.version}\n\n{summary(row)}\n")
        parts.append("| fact | value |\n|---|---|")
        parts.extend(f"| {name} | {value.replace('|', '/')} |" for name, value in _facts(row))
    return "\n".join(parts) + "\n"


if __name__ == "__main__":
    Path(sys.argv[1]).write_text(render(), encoding="utf-8")
