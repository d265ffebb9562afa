"""``V``, ``V:IMPL`` and ``all`` as --variant takes them."""

from __future__ import annotations

import pytest

from linbench.variants.registry import list_variants
from linbench.variants.selection import select_impls


def test_a_variant_name_selects_its_impls_and_an_impl_name_one() -> None:
    picks = select_impls(["cosine", "softmax:sdpa", "cosine:chunked"])
    assert [(p.variant.name, p.impl, p.explicit) for p in picks] == [
        ("cosine", "quadratic", False),
        ("cosine", "naive", False),
        ("cosine", "chunked", False),
        ("cosine", "recurrent", False),
        ("cosine", "kernel", False),
        ("cosine", "fla", False),
        ("softmax", "sdpa", True),
    ]


def test_a_compiled_impl_is_selected_only_by_its_own_name() -> None:
    """torch.compile costs minutes per worker on a CPU: a bare variant name does not pay it."""
    assert "compiled" not in {p.impl for p in select_impls(["cosine", "all"])}
    (pick,) = select_impls(["cosine:compiled"])
    assert (pick.impl, pick.explicit) == ("compiled", True)


def test_all_and_nothing_select_every_variant() -> None:
    assert {p.variant.name for p in select_impls(["all"])} == set(list_variants())
    assert select_impls([]) == select_impls(["all"])


@pytest.mark.parametrize(("spec", "message"), [("nope", "unknown variant"), ("cosine:nope", "no impl 'nope'")])
def test_unknown_names_are_value_errors(spec: str, message: str) -> None:
    with pytest.raises(ValueError, match=message):
        select_impls([spec])


@pytest.mark.parametrize("spec", ["cosine:", "cosine: "])
def test_a_colon_with_no_impl_after_it_is_refused(spec: str) -> None:
    """It once selected every impl of cosine, as if the colon were not there."""
    with pytest.raises(ValueError, match="names no impl after the colon"):
        select_impls([spec])
