"""How a comparison's figures are written (no device, no measurement)."""

from __future__ import annotations

from linbench.gate.render import _percent


def test_a_threshold_past_a_thousand_percent_is_shown_as_past_it() -> None:
    # At 3 rounds a side the rule's threshold can be 10^20 %: it says "not judgeable yet".
    assert _percent(7e19, signed=False) == "±>999%"
    assert _percent(0.124, signed=False) == "±12.4%"
    assert _percent(0.3) == "+30.0%" and _percent(None) == "-"
