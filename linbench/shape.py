"""The sizes and modes of one attention call, shared by the correctness checks, the variants'
FLOP counts, the sweep and the results schema."""

from __future__ import annotations

from dataclasses import dataclass

# What one call computes: the forward, the backward of a forward built untimed, or both.
MODES = ("fwd", "bwd", "fwdbwd")


@dataclass(frozen=True, order=True)
class Shape:
    """q is (batch, heads, seq, dim_k), k (batch, kv_heads, seq, dim_k), v (batch, kv_heads,
    seq, dim_v). ``kv_heads`` below ``heads`` is grouped-query attention (1: multi-query):
    query heads h·G .. h·G + G − 1 read key/value head h, G = heads / kv_heads. Left 0 it is
    ``heads`` (every head its own keys and values)."""

    batch: int
    heads: int
    seq: int
    dim_k: int
    dim_v: int
    kv_heads: int = 0

    def __post_init__(self) -> None:
        if self.kv_heads == 0:
            object.__setattr__(self, "kv_heads", self.heads)
        if self.kv_heads < 1 or self.heads % self.kv_heads:
            raise ValueError(f"kv_heads {self.kv_heads} must divide heads {self.heads}")

    @property
    def grouped(self) -> bool:
        """Fewer key/value heads than query heads (grouped-query or multi-query attention)."""
        return self.kv_heads != self.heads

    @property
    def label(self) -> str:
        """A readable id such as ``B2-H3-S257-Dk16-Dv24`` (test ids, progress lines), with
        ``-KV2`` when two key/value heads serve the query heads."""
        grouped = f"-KV{self.kv_heads}" if self.grouped else ""
        return f"B{self.batch}-H{self.heads}{grouped}-S{self.seq}-Dk{self.dim_k}-Dv{self.dim_v}"

    def sizes(self) -> tuple[int, int, int, int, int]:
        """(batch, heads, seq, dim_k, dim_v): what a FLOP count takes."""
        return (self.batch, self.heads, self.seq, self.dim_k, self.dim_v)

    def dominates(self, other: Shape) -> bool:
        """At least as large as ``other`` along every axis (so at least as costly)."""
        mine, theirs = (*self.sizes(), self.kv_heads), (*other.sizes(), other.kv_heads)
        return all(a >= b for a, b in zip(mine, theirs, strict=True))
