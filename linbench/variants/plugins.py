"""Loading a user's variant from a Python file (``--plugin path/to/file.py``).

The file registers its variants when imported, with ``linbench.register_variant``
(installed packages use the ``linbench.variants`` entry point instead).
"""

from __future__ import annotations

import hashlib
import importlib.util
import sys
from pathlib import Path

_loaded: dict[str, list[str]] = {}


class PluginError(ValueError):
    """A plugin file that is missing or fails to import; the message names the file."""


def load_plugin_file(path: str | Path) -> list[str]:
    """Import ``path`` once and return the names of the variants it registered."""
    from linbench.variants.registry import get_variant, list_variants

    resolved = Path(path).expanduser().resolve()
    key = str(resolved)
    if key in _loaded:
        return _loaded[key]
    if resolved.is_dir():
        raise PluginError(f"plugin file {str(path)!r} is a folder; give the Python file that registers the variants")
    if not resolved.is_file():
        raise PluginError(f"plugin file {str(path)!r} does not exist")
    before = {name: get_variant(name) for name in list_variants()}
    digest = hashlib.sha1(key.encode()).hexdigest()[:8]
    module_name = f"linbench_plugin_{resolved.stem}_{digest}"
    spec = importlib.util.spec_from_file_location(module_name, resolved)
    if spec is None or spec.loader is None:
        raise PluginError(f"plugin file {str(path)!r} is not a Python module")
    module = importlib.util.module_from_spec(spec)
    sys.modules[module_name] = module
    try:
        spec.loader.exec_module(module)
    except Exception as exc:  # whatever the user's file raises is reported, in one line
        del sys.modules[module_name]
        raise PluginError(f"plugin file {str(path)!r} failed to load: {type(exc).__name__}: {exc}") from None
    after = {name: get_variant(name) for name in list_variants()}
    if all(before.get(name) is variant for name, variant in after.items()):
        # Without this, every built-in variant would run in its place, unnoticed.
        del sys.modules[module_name]
        raise PluginError(
            f"plugin file {str(path)!r} registered no variant; "
            "call linbench.register_variant(Variant(...)) in it (docs/plugins.md)"
        )
    # Only the new names: unloading the file must not remove a built-in variant it replaced.
    _loaded[key] = [name for name in after if name not in before]
    return _loaded[key]


def unload_plugin_file(path: str | Path) -> None:
    """Unregister the variants ``path`` registered, so a later load imports it afresh."""
    from linbench.variants.registry import unregister_variant

    key = str(Path(path).expanduser().resolve())
    for name in _loaded.pop(key, []):
        unregister_variant(name)
