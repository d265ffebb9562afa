"""Device names checked against this machine, with a library error (CPU)."""

from __future__ import annotations

import pytest
import torch

from linbench.devices import DeviceError, resolve_device


def test_cpu_and_auto_resolve_without_a_gpu() -> None:
    assert resolve_device(" CPU ") == torch.device("cpu")
    if not torch.cuda.is_available():
        assert resolve_device("auto") == torch.device("cpu")


@pytest.mark.parametrize(("name", "fragment"), [("tpu9", "unknown device 'tpu9'"), ("meta", "unsupported device")])
def test_an_unknown_device_is_a_value_error_naming_the_choices(name: str, fragment: str) -> None:
    with pytest.raises(DeviceError, match=fragment) as caught:
        resolve_device(name)
    assert isinstance(caught.value, ValueError) and "cuda:N" in str(caught.value)


@pytest.mark.skipif(torch.cuda.is_available(), reason="needs a machine without CUDA")
def test_cuda_where_there_is_none_says_why() -> None:
    with pytest.raises(DeviceError, match="CUDA is not available on this machine"):
        resolve_device("cuda:0")
