"""The sizes and modes of one attention call, shared by the correctness checks, the variants'
FLOP counts, the sweep and the results schema."""

from __future__ import annotations

from dataclasses import dataclass

# What one call computes: the forward, the backward of a forward built untimed, or both.
MODES = ("fwd", "bwd", "fwdbwd")


@dataclass(frozen=True, order=True)
class Shape:
    """q is (batch, heads, seq, dim_k), k the same, v (batch, heads, seq, dim_v)."""

    batch: int
    heads: int
    seq: int
    dim_k: int
    dim_v: int

    @property
    def label(self) -> str:
        """A readable id such as ``B2-H3-S257-Dk16-Dv24`` (test ids, progress lines)."""
        return f"B{self.batch}-H{self.heads}-S{self.seq}-Dk{self.dim_k}-Dv{self.dim_v}"

    def sizes(self) -> tuple[int, int, int, int, int]:
        return (self.batch, self.heads, self.seq, self.dim_k, self.dim_v)

    def dominates(self, other: Shape) -> bool:
        """At least as large as ``other`` along every axis (so at least as costly)."""
        return all(a >= b for a, b in zip(self.sizes(), other.sizes(), strict=True))
