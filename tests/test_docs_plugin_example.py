"""The plugin example of docs/plugins.md is a working plugin, not a sketch (CPU)."""

from __future__ import annotations

import re
from pathlib import Path

from linbench.correctness import Shape, check_impl
from linbench.variants.plugins import load_plugin_file, unload_plugin_file
from linbench.variants.registry import get_variant

PLUGINS_DOC = Path(__file__).parents[1] / "docs" / "plugins.md"


def test_the_documented_plugin_registers_a_variant_that_passes_its_check(tmp_path: Path) -> None:
    match = re.search(r"```python\n(# my_attention\.py.*?)```", PLUGINS_DOC.read_text(), re.S)
    assert match, "docs/plugins.md's plugin example is missing"
    assert len(match.group(1).strip().splitlines()) <= 32
    plugin = tmp_path / "my_attention.py"
    plugin.write_text(match.group(1))
    try:
        assert load_plugin_file(plugin) == ["relu"]
        for causal in (True, False):
            result = check_impl(get_variant("relu"), "fused", Shape(1, 2, 65, 16, 16), causal=causal)
            assert result.ok, result.describe()
    finally:
        unload_plugin_file(plugin)
