"""linbench's version (pyproject.toml's), in a module of its own on the lowest floor: any room may
read it, where importing the package root from below would climb to the public API it loads."""

__version__ = "0.1.0"
