"""The panels ``run --help`` and ``decode --help`` group their options in (Typer's
``rich_help_panel``), so a reader of some fifty options finds the few they came for: each
option is declared with its panel's ``typer.Option`` (``ShapeOption("--seq", ...)``). The
options that spread a run over several GPUs have their own panel (cli/fleet_options.py PANEL).
"""

from __future__ import annotations

from functools import partial

import typer

WHAT = "What to run"  # variants, the impls beside them, suites, presets, plugins, parameters
SHAPES = "Shapes"  # the sizes, dtypes, modes and masking of each point
SERVING = "Serving: decode as a server runs it"  # decode's serving options (docs/decode.md)
MEASUREMENT = "Measurement"  # the device, time limits, repetitions, threads, worker processes
OUTPUT = "Output"  # where the run folder goes, resuming it, what is printed, what ends it with 1
PANELS = (WHAT, SHAPES, SERVING, MEASUREMENT, OUTPUT)

WhatOption = partial(typer.Option, rich_help_panel=WHAT)
ShapeOption = partial(typer.Option, rich_help_panel=SHAPES)
ServingOption = partial(typer.Option, rich_help_panel=SERVING)
MeasureOption = partial(typer.Option, rich_help_panel=MEASUREMENT)
OutputOption = partial(typer.Option, rich_help_panel=OUTPUT)
