"""``linbench list``: every variant and impl, their costs, parameters, and whether they run here;
and the decoders ``linbench decode`` can run."""

from __future__ import annotations

from collections.abc import Iterable
from pathlib import Path
from typing import TYPE_CHECKING, Annotated

import typer
from rich.markup import escape
from rich.table import Table

from linbench.cli.common import DEVICE_HELP, PLUGIN_HELP, load_plugins, resolve_device, stdout_console
from linbench.cli.errors import usage_errors

if TYPE_CHECKING:
    import torch

    from linbench.variants.declarations import Impl, Param
    from linbench.variants.variant import Variant


def format_params(params: Iterable[Param]) -> str:
    """``name=default`` pairs; a None default is derived from the input, so say so."""
    parts = [f"{p.name}={'<from input>' if p.default is None else p.default}" for p in params]
    return escape(", ".join(parts)) or "-"


# What `list` says of the compiled impls before csrc/ is built: it never builds them itself.
NOT_BUILT = "not built yet (builds on first use, about 25 s on two idle cores; or now: linbench build)"


def _needs_build(impl: Impl) -> bool:
    """An impl of linbench's compiled kernels while csrc/ is not built yet."""
    from linbench.kernels import build, ops

    return impl.availability is ops.unavailable_reason and not build.is_built()


def impl_table(variants: list[Variant], device: torch.device) -> Table:
    """One row per impl: what it costs, what it takes, and whether it can run on ``device``."""
    table = Table(title=f"variants and impls (runs here = on {device})", title_justify="left")
    # "kv heads": how the impl takes fewer key/value heads than heads (--kv-heads); "v heads":
    # how it takes more value heads (--v-heads), or "-" where its variant has none.
    for column in ("variant", "impl", "time", "memory", "impl params", "kv heads", "v heads", "runs here"):
        table.add_column(column)
    for variant in variants:
        for i, impl in enumerate(variant.impls.values()):
            if _needs_build(impl):
                runs = f"[yellow]{NOT_BUILT}[/]"
            else:
                reason = impl.unavailable_reason(device)
                runs = "[green]yes[/]" if reason is None else f"[red]no[/]: {escape(reason)}"
            label = f"{impl.name} (ref)" if impl.name == variant.reference else impl.name
            heads = (_kv_heads(impl.gqa), _v_heads(variant, impl.gva))
            cells = (impl.time_complexity, impl.memory_complexity, format_params(impl.params), *heads)
            table.add_row(variant.name, label, *cells, runs, end_section=i == len(variant.impls) - 1)
    return table


def _kv_heads(native: bool) -> str:
    """native: one state per key/value head; expanded: k and v repeated to every head."""
    return "native" if native else "expanded"


def _v_heads(variant: Variant, native: bool) -> str:
    """native: the kernel takes v with more heads than q and k; expanded: q and k repeated to
    v's heads; "-": the variant has no value heads apart from its query heads."""
    if not variant.value_heads:
        return "-"
    return "native" if native else "expanded"


def variant_table(variants: list[Variant]) -> Table:
    """One row per variant: the function it computes, with which masking, and the parameters
    every impl shares."""
    table = Table(title="what each variant computes", title_justify="left")
    table.add_column("variant")
    table.add_column("maths", no_wrap=True)  # a formula read whole; the parameters wrap instead
    table.add_column("masking")
    table.add_column("variant params", overflow="fold")
    for variant in variants:
        masking = ", ".join(variant.masking) if len(variant.masking) > 1 else f"{variant.masking[0]} only"
        table.add_row(variant.name, escape(variant.summary), masking, format_params(variant.param_specs))
    return table


# What each dtype rule of an extra input means, for a reader (variants/extra_inputs.py's DTYPE_RULES).
DTYPE_WORDS = {"like_q": "q's", "fp32_or_wider": "fp32 for 16-bit q, else q's"}


def extra_input_table(variants: list[Variant]) -> Table | None:
    """One row per tensor a variant takes beside q, k and v (its gates, β): drawn untimed by
    every workload; None when no variant takes one."""
    from linbench.variants.extra_inputs import SHAPES

    rows = [(variant.name, extra) for variant in variants for extra in variant.extra_inputs]
    if not rows:
        return None
    table = Table(title="extra inputs (drawn untimed beside q, k and v)", title_justify="left")
    for column in ("variant", "input", "shape", "dtype", "what", "drawn as"):
        table.add_column(column)
    for name, extra in rows:
        cells = (SHAPES[extra.shape], DTYPE_WORDS[extra.dtype_rule], escape(extra.summary), escape(extra.distribution))
        table.add_row(name, extra.name, *cells)
    return table


def decoder_table(variants: list[Variant]) -> Table:
    """One row per decoder: how ``linbench decode`` can generate with each variant."""
    table = Table(title="decoders (linbench decode --variant VARIANT:DECODER)", title_justify="left")
    for column in ("variant", "decoder", "state", "per token", "kv heads", "how"):
        table.add_column(column)
    for variant in variants:
        for decoder in variant.decoders.values():
            costs = (text if text != "-" else "not declared" for text in (decoder.state_memory, decoder.step_time))
            cells = (*costs, _kv_heads(decoder.gqa), escape(decoder.summary))
            table.add_row(variant.name, decoder.name, *cells)
    return table


def list_command(
    device: Annotated[str, typer.Option(help=f"Device for 'runs here': {DEVICE_HELP}.")] = "auto",
    plugin: Annotated[list[Path] | None, typer.Option("--plugin", help=PLUGIN_HELP)] = None,
) -> None:
    """List every variant and impl with its complexity, parameters, and whether it runs here."""
    with usage_errors():
        load_plugins(plugin)
        resolved = resolve_device(device)
    from linbench.variants.registry import get_variant, list_variants

    variants: list[Variant] = [get_variant(name) for name in list_variants()]
    console = stdout_console()
    console.print(impl_table(variants, resolved))
    console.print(variant_table(variants))
    extra = extra_input_table(variants)
    if extra is not None:
        console.print(extra)
    console.print(decoder_table(variants))
