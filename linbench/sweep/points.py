"""Axes × impls → the ordered list of points a run measures.

The order is chosen for honest comparisons and cheap failure handling: sizes grow, so an
out-of-memory point can stand for every larger one, and at each size every impl runs one
after the other, so impls are compared under the same machine conditions.
"""

from __future__ import annotations

from collections.abc import Collection, Iterable
from dataclasses import asdict, dataclass
from itertools import product
from typing import Any

from linbench.results.record import row_key
from linbench.results.schema import KEY_COLUMNS
from linbench.shape import Shape
from linbench.sweep.lengths import Pack
from linbench.sweep.serving import Serving
from linbench.sweep.spec import Axes

__all__ = ["KEY_COLUMNS", "Point", "expand_pack_points", "expand_points"]


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
    # A pack's points (linbench/sweep/lengths.py): "packed" (one (1, H, T, D) batch with its
    # sequences' boundaries) or "padded" (each sequence padded to the longest); "" otherwise.
    # Not a key column: a pack's packed and padded points differ in shape.
    packing: str = ""
    chunk: int | None = None  # a --chunk sweep's chunk_size, for an impl that takes one
    # decode as it is served (sweep/serving.py): tokens a request takes a step, the dtype the
    # state is kept in between steps (None: the compute dtype), the layout of the pool's state
    # matrices (None: v-last, (H, Dk, Dv)), and the sweep's serving settings (not a key
    # column: the same for every point of a run).
    tokens_per_step: int | None = None
    state_dtype: str | None = None
    state_layout: str | None = None
    serving: Serving | None = None

    @property
    def series(self) -> tuple[str, str, str, bool, str, str, str]:
        """Everything but the shape: the points that form one curve family."""
        return (self.variant, self.impl, self.mode, self.causal, self.dtype, self.device, self.packing)

    @property
    def key(self) -> tuple[str, ...]:
        """The KEY_COLUMNS values as strings, as they are read back from CSV (record.row_key)."""
        return row_key(self.as_row())

    def as_row(self) -> dict[str, Any]:
        row = {k: getattr(self, k) for k in self.__dataclass_fields__ if k not in ("shape", "packing", "serving")}
        return row | asdict(self.shape)

    @property
    def serves(self) -> bool:
        """A decode point measured as a server runs it (linbench/variants/serving.py)."""
        given = (self.tokens_per_step, self.state_dtype, self.state_layout)
        return self.serving is not None or any(value is not None for value in given)

    @property
    def label(self) -> str:
        masking = "causal" if self.causal else "bidir"
        chunk = f" C{self.chunk}" if self.chunk is not None else ""
        packing = f" {self.packing}" if self.packing else ""
        steps = f" T{self.tokens_per_step}" if self.tokens_per_step is not None else ""
        state = f" state {self.state_dtype}" if self.state_dtype is not None else ""
        layout = f" {self.state_layout}" if self.state_layout is not None else ""
        shape = f"{self.shape.label}{chunk}{steps}{state}{layout}"
        return f"{self.variant}:{self.impl}{packing} {self.mode} {self.dtype} {masking} {shape}"


def expand_points(
    blocks: Iterable[Axes],
    targets: Iterable[tuple[str, str]],
    device: str,
    chunked: Collection[tuple[str, str]] = (),
    serving: Serving | None = None,
    grown: Collection[tuple[str, str]] = (),
) -> list[Point]:
    """Every point of every block, each once, in run order. The targets in ``chunked`` (those
    that take chunk_size) get a point per chunk size of a block that sweeps them. Decode's
    serving points: one per tokens per step, state dtype and state layout, but a decoder in
    ``grown`` (a KV cache, kept in the compute dtype, not pooled) gets no state dtype or layout
    of its own."""
    targets = list(targets)
    points: dict[Point, None] = {}
    for axes in blocks:
        for dtype in axes.dtype:
            for causal in axes.causal:
                shapes = [
                    Shape(b, h, s, dk, dv, kv, hv)
                    for s in axes.seq
                    for b in axes.batches(s)
                    for h in axes.heads
                    for kv in axes.kv_heads_for(h)
                    for hv in axes.v_heads_for(h)
                    for dk, dv in axes.dims()
                ]
                # Equal volumes (a --tokens sweep holds batch·seq fixed): shorter lengths first.
                for shape in sorted(shapes, key=lambda sh: (_volume(sh), sh.seq, sh)):
                    for mode in axes.mode:
                        for variant, impl in targets:
                            if not axes.measures(variant, impl):
                                continue  # a hybrid's block of the other layer kind, or a table's skip
                            chunks = axes.chunk if axes.chunk and (variant, impl) in chunked else (None,)
                            states = (None,) if (variant, impl) in grown else axes.state_dtype or (None,)
                            layouts = (None,) if (variant, impl) in grown else axes.state_layout or (None,)
                            ways = product(chunks, axes.tokens_per_step or (None,), states, layouts)
                            for chunk, steps, state, layout in ways:
                                points[
                                    Point(
                                        *(variant, impl, mode, causal, dtype, device, shape),
                                        chunk=chunk,
                                        tokens_per_step=steps,
                                        state_dtype=state,
                                        state_layout=layout,
                                        serving=serving,
                                    )
                                ] = None
    return list(points)


def expand_pack_points(
    blocks: Iterable[Axes], targets: Iterable[tuple[str, str]], device: str, pack: Pack, packings: Iterable[str]
) -> list[Point]:
    """Every point of a pack run: each block's heads, dims, dtypes, maskings and modes, with
    the pack run each of ``packings`` ways, packed (1, H, T, D) and padded (N, H, L_max, D).
    A pack of one sequence has no padding: its padded points would be its packed ones."""
    targets = list(targets)
    sizes = {"packed": (1, pack.tokens), "padded": (pack.sequences, pack.longest)}
    ways = list(packings)
    if pack.sequences == 1 and "packed" in ways:
        ways = ["packed"]
    points: dict[Point, None] = {}
    for axes in blocks:
        grid = product(axes.dtype, axes.causal, axes.heads, axes.dims(), axes.mode, targets, ways)
        for dtype, causal, heads, (dk, dv), mode, (variant, impl), way in grid:
            if not axes.measures(variant, impl):
                continue
            shape = Shape(sizes[way][0], heads, sizes[way][1], dk, dv)
            points[Point(variant, impl, mode, causal, dtype, device, shape, way)] = None
    return list(points)


def _volume(shape: Shape) -> int:
    # Roughly the cost order: small shapes first so failures at a size predict the larger ones.
    return shape.batch * shape.heads * shape.seq * (shape.dim_k + shape.dim_v)
