"""The files each impl runs, from linbench's own import graph, and what a change touches (no device:
no impl runs)."""

from __future__ import annotations

from linbench.impl_code import impl_code, touched


def test_the_runner_and_the_variant_machinery_widen_nothing() -> None:
    changes = touched(
        ["linbench/runner/worker.py", "linbench/measure/timer.py", "linbench/variants/declarations.py", "docs/ci.md"],
        impl_code(),
    )
    assert changes.names == ()
    assert changes.shared == ("linbench/variants/declarations.py",)
    assert changes.infrastructure == (
        "linbench/variants/declarations.py",
        "linbench/measure/timer.py",
        "linbench/runner/worker.py",
    )


def test_csrc_belongs_to_the_kernel_impls_alone() -> None:
    changes = touched(["csrc/cpu/linear_attention.cpp"], impl_code())
    assert set(changes.names) == {"cosine:kernel", "cosformer:kernel", "heinsen:kernel", "linear:kernel"}


def test_an_impl_runs_its_own_module_and_what_its_function_closes_over() -> None:
    code = impl_code()
    assert "linbench/variants/heinsen/chunked.py" in code["heinsen:chunked"]
    assert "linbench/variants/heinsen/chunked.py" not in code["heinsen:recurrent"]
    # the variant's preparation, which the shared gated form closes over
    assert "linbench/variants/gated/gated_deltanet/__init__.py" in code["gated-deltanet:chunked"]
    assert "linbench/variants/gated/gated_deltanet/__init__.py" not in code["deltanet:chunked"]
    assert not any(path.startswith("linbench/runner/") for files in code.values() for path in files)


def test_a_variant_s_feature_map_widens_to_that_variant_s_impls_alone() -> None:
    # The gated families' fla impls share fla's loading with cosine:fla and linear:fla, not their
    # feature maps: a change to elu + 1 re-measures linear's impls, not fifty (it did, through
    # the fla module that held both adapters).
    linear = touched(["linbench/variants/linear/features.py"], impl_code())
    assert set(linear.names) == {
        "linear:chunked",
        "linear:compiled",
        "linear:fla",
        "linear:quadratic",
        "linear:recurrent",
    }
    cosine = touched(["linbench/variants/cosine/features.py"], impl_code())
    assert {name.split(":")[0] for name in cosine.names} == {"cosine"}
