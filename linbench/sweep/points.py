"""Axes × impls → the ordered list of points a run measures.

The order is chosen for honest comparisons and cheap failure handling: sizes grow, so an
out-of-memory point can stand for every larger one, and at each size every impl runs one
after the other, so impls are compared under the same machine conditions.
"""

from __future__ import annotations

from collections.abc import Collection, Iterable
from dataclasses import asdict, dataclass
from typing import Any

from linbench.results.record import row_key
from linbench.results.schema import KEY_COLUMNS
from linbench.shape import Shape
from linbench.sweep.spec import Axes

__all__ = ["KEY_COLUMNS", "Point", "expand_points"]


@dataclass(frozen=True)
class Point:
    """One row of results: an impl of a variant, in one mode, dtype and masking, at one shape."""

    variant: str
    impl: str
    mode: str
    causal: bool
    dtype: str
    device: str
    shape: Shape
    chunk: int | None = None  # a --chunk sweep's chunk_size, for an impl that takes one

    @property
    def series(self) -> tuple[str, str, str, bool, str, str]:
        """Everything but the shape: the points that form one curve family."""
        return (self.variant, self.impl, self.mode, self.causal, self.dtype, self.device)

    @property
    def key(self) -> tuple[str, ...]:
        """The KEY_COLUMNS values as strings, as they are read back from CSV (record.row_key)."""
        return row_key(self.as_row())

    def as_row(self) -> dict[str, Any]:
        row = {k: v for k, v in asdict(self).items() if k != "shape"}
        return row | asdict(self.shape)

    @property
    def label(self) -> str:
        masking = "causal" if self.causal else "bidir"
        chunk = f" C{self.chunk}" if self.chunk is not None else ""
        return f"{self.variant}:{self.impl} {self.mode} {self.dtype} {masking} {self.shape.label}{chunk}"


def expand_points(
    blocks: Iterable[Axes],
    targets: Iterable[tuple[str, str]],
    device: str,
    chunked: Collection[tuple[str, str]] = (),
) -> list[Point]:
    """Every point of every block, each once, in run order. The targets in ``chunked`` (those
    that take chunk_size) get a point per chunk size of a block that sweeps them."""
    targets = list(targets)
    points: dict[Point, None] = {}
    for axes in blocks:
        for dtype in axes.dtype:
            for causal in axes.causal:
                shapes = [
                    Shape(b, h, s, dk, dv, kv)
                    for s in axes.seq
                    for b in axes.batches(s)
                    for h in axes.heads
                    for kv in axes.kv_heads_for(h)
                    for dk, dv in axes.dims()
                ]
                # Equal volumes (a --tokens sweep holds batch·seq fixed): shorter lengths first.
                for shape in sorted(shapes, key=lambda sh: (_volume(sh), sh.seq, sh)):
                    for mode in axes.mode:
                        for variant, impl in targets:
                            chunks = axes.chunk if axes.chunk and (variant, impl) in chunked else (None,)
                            for chunk in chunks:
                                points[Point(variant, impl, mode, causal, dtype, device, shape, chunk)] = None
    return list(points)


def _volume(shape: Shape) -> int:
    # Roughly the cost order: small shapes first so failures at a size predict the larger ones.
    return shape.batch * shape.heads * shape.seq * (shape.dim_k + shape.dim_v)
