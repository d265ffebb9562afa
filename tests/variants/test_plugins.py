"""Loading a ``--plugin`` file: what it registers, and the one-line errors naming it (CPU)."""

from __future__ import annotations

from pathlib import Path

import pytest

from linbench.variants.plugins import PluginError, load_plugin_file, unload_plugin_file
from linbench.variants.registry import get_variant, list_variants

REGISTERS = """
from linbench import Impl, Variant, register_variant

def same(q, k, v, *, causal):
    return v

register_variant(Variant("test-plugin-loaded", "O = V", (Impl("same", same, "", "O(sd)", "O(sd)"),), "same", (),
                         lambda *a: 0.0, "O(sd)", "O(sd)"))
"""


def test_a_plugin_file_registers_its_variants(tmp_path: Path) -> None:
    plugin = tmp_path / "same.py"
    plugin.write_text(REGISTERS)
    try:
        assert load_plugin_file(plugin) == ["test-plugin-loaded"]
        assert load_plugin_file(plugin) == ["test-plugin-loaded"]  # loaded once
        assert get_variant("test-plugin-loaded").reference == "same"
    finally:
        unload_plugin_file(plugin)
    assert "test-plugin-loaded" not in list_variants()


def test_a_plugin_file_that_registers_nothing_is_an_error_naming_it(tmp_path: Path) -> None:
    plugin = tmp_path / "nothing.py"
    plugin.write_text("import torch\nVARIANT = None  # forgot register_variant\n")
    with pytest.raises(PluginError, match=r"plugin file '.*nothing\.py' registered no variant") as caught:
        load_plugin_file(plugin)
    assert "register_variant" in str(caught.value)
    with pytest.raises(PluginError, match="registered no variant"):  # and again: it is not remembered as loaded
        load_plugin_file(plugin)


def test_a_plugin_file_that_replaces_a_variant_registers_something(tmp_path: Path) -> None:
    plugin = tmp_path / "replaces.py"
    plugin.write_text(
        "import dataclasses\nfrom linbench import get_variant, register_variant\n"
        "register_variant(dataclasses.replace(get_variant('linear'), summary='mine'), replace=True)\n"
    )
    original = get_variant("linear")
    try:
        assert load_plugin_file(plugin) == []  # nothing new: unloading must not remove linear
        assert get_variant("linear").summary == "mine"
    finally:
        unload_plugin_file(plugin)
        from linbench.variants.registry import register_variant

        register_variant(original, replace=True)


def test_a_folder_given_as_a_plugin_says_so(tmp_path: Path) -> None:
    """It said the folder "does not exist"."""
    with pytest.raises(PluginError, match=r"is a folder; give the Python file"):
        load_plugin_file(tmp_path)
