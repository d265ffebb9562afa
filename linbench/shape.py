"""The sizes and modes of one attention call, shared by the correctness checks, the variants'
FLOP counts, the sweep and the results schema."""

from __future__ import annotations

from dataclasses import dataclass

# What one call computes: the forward, the backward of a forward built untimed, or both.
MODES = ("fwd", "bwd", "fwdbwd")
# How a decoding state's Dk×Dv matrix per head is laid out (FlashInfer's names): v-last, (H, Dk,
# Dv), linbench's and fla's own; k-last, (H, Dv, Dk), FlashInfer's decode kernels' (fla's
# ``state_v_first``).
V_LAST, K_LAST = "v-last", "k-last"
STATE_LAYOUTS = (V_LAST, K_LAST)
# How often a pass moves each of q, k, v and the output (or their gradients), each per (batch,
# token, head of its own): fwd reads q, k, v and writes the output; bwd reads q, k, v and the
# output's gradient and writes dq, dk, dv; fwdbwd both, each pass reading its inputs afresh.
TENSOR_PASSES = {"fwd": (1, 1, 1, 1), "bwd": (2, 2, 2, 1), "fwdbwd": (3, 3, 3, 2)}


@dataclass(frozen=True, order=True)
class Shape:
    """q is (batch, heads, seq, dim_k), k (batch, kv_heads, seq, dim_k), v (batch, kv_heads,
    seq, dim_v). ``kv_heads`` below ``heads`` is grouped-query attention (1: multi-query):
    query heads h·G .. h·G + G − 1 read key/value head h, G = heads / kv_heads. Left 0 it is
    ``heads`` (every head its own keys and values).

    ``v_heads`` above ``heads`` is the other grouping (GVA, Qwen3-Next's Gated DeltaNet): v is
    (batch, v_heads, seq, dim_v), value head j reads q/k head j // (v_heads / heads), and the
    output, the state, the gates and β are per value head. Left 0 it is ``heads``. The two
    groupings do not combine."""

    batch: int
    heads: int
    seq: int
    dim_k: int
    dim_v: int
    kv_heads: int = 0
    v_heads: int = 0

    def __post_init__(self) -> None:
        if self.kv_heads == 0:
            object.__setattr__(self, "kv_heads", self.heads)
        if self.v_heads == 0:
            object.__setattr__(self, "v_heads", self.heads)
        if self.kv_heads < 1 or self.heads % self.kv_heads:
            raise ValueError(f"kv_heads {self.kv_heads} must divide heads {self.heads}")
        if self.v_heads < self.heads or self.v_heads % self.heads:
            raise ValueError(f"v_heads {self.v_heads} must be a multiple of heads {self.heads}")
        if self.grouped and self.value_grouped:
            raise ValueError(
                f"v_heads {self.v_heads} (more value heads) and kv_heads {self.kv_heads} "
                "(fewer key/value heads) do not combine"
            )

    @property
    def grouped(self) -> bool:
        """Fewer key/value heads than query heads (grouped-query or multi-query attention)."""
        return self.kv_heads != self.heads

    @property
    def value_grouped(self) -> bool:
        """More value heads than q/k heads (GVA)."""
        return self.v_heads != self.heads

    @property
    def v_tensor_heads(self) -> int:
        """v's heads: the value heads under GVA, else the key/value heads."""
        return self.v_heads if self.value_grouped else self.kv_heads

    @property
    def label(self) -> str:
        """A readable id such as ``B2-H3-S257-Dk16-Dv24`` (test ids, progress lines), with
        ``-KV2`` when two key/value heads serve the query heads, ``-HV8`` with eight value heads."""
        grouped = f"-KV{self.kv_heads}" if self.grouped else ""
        grouped += f"-HV{self.v_heads}" if self.value_grouped else ""
        return f"B{self.batch}-H{self.heads}{grouped}-S{self.seq}-Dk{self.dim_k}-Dv{self.dim_v}"

    def sizes(self) -> tuple[int, int, int, int, int]:
        """(batch, heads, seq, dim_k, dim_v): what a FLOP count takes, heads being the output's
        (the value heads under GVA, whose recurrences are the work)."""
        return (self.batch, self.v_heads, self.seq, self.dim_k, self.dim_v)

    def qkvo_elements(self, mode: str) -> int | None:
        """The elements of q, k, v and the output a ``mode`` pass moves at least (TENSOR_PASSES),
        each at its own heads: q at the heads, k at the key/value heads, v at ``v_tensor_heads``,
        the output at the value heads. None for a mode without a model (decode)."""
        if mode not in TENSOR_PASSES:
            return None
        q, k, v, out = TENSOR_PASSES[mode]
        per_token = self.dim_k * (q * self.heads + k * self.kv_heads)
        per_token += self.dim_v * (v * self.v_tensor_heads + out * self.v_heads)
        return self.batch * self.seq * per_token

    def dominates(self, other: Shape) -> bool:
        """At least as large as ``other`` along every axis (so at least as costly)."""
        mine = (*self.sizes(), self.heads, self.kv_heads)
        theirs = (*other.sizes(), other.heads, other.kv_heads)
        return all(a >= b for a, b in zip(mine, theirs, strict=True))
