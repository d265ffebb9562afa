"""Other kernel libraries' own Python layers, run on the CPU as if on a Hopper or Blackwell GPU.

The wheels of FlashInfer, cuDNN's frontend and FlashQLA install with ``pip install --no-deps``
(.ci/run); their native and GPU-only dependencies (TVM FFI, CUTLASS's CuTe DSL, cuda-python,
TileLang) are stood in by ``Stubs``: a module whose every attribute is a class that takes any
call, subscript, arithmetic or decorator use, so the libraries' modules import and their own
checks and dispatch run for real. ``on_gpu`` makes the process look like one GPU of a compute
capability (torch.cuda's queries, ``Tensor.is_cuda``, the libraries' cached device queries and
linbench's own), and each test replaces only the lowest kernel launch with a stand-in that
records what it receives and computes the result with fla's naive references (fla_naive.py).
"""

from __future__ import annotations

import contextlib
import functools
import importlib
import importlib.abc
import importlib.machinery
import importlib.metadata
import importlib.util
import itertools
import sys
import types
from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any

import pytest
import torch
import torch.nn.functional as F
from fla_naive import naive
from torch import Tensor

try:
    from linbench.variants.libraries import wrapper
except ImportError:  # an older linbench, run against these tests to see them fail
    wrapper = None  # type: ignore[assignment]


def installed(distribution: str) -> bool:
    try:
        importlib.metadata.version(distribution)
    except importlib.metadata.PackageNotFoundError:
        return False
    return True


def need(distribution: str) -> None:
    """Skip, saying why, where a library's wheel is not installed (.ci/run installs it)."""
    if not installed(distribution):
        pytest.skip(f"{distribution} is not installed (pip install --no-deps {distribution}; see .ci/run)")


def _dunder(name: str) -> bool:
    return name.startswith("__") and name.endswith("__")


class _Anything(type):
    """A class that stands for any attribute of a stubbed module (module docstring)."""

    def __getattr__(cls, name: str) -> Any:
        if _dunder(name):
            raise AttributeError(name)
        made = _Anything(name, (), {})
        type.__setattr__(cls, name, made)
        return made

    def __call__(cls, *args: Any, **kwargs: Any) -> Any:
        decorated = len(args) == 1 and not kwargs and callable(args[0]) and not isinstance(args[0], _Anything)
        return args[0] if decorated else cls

    def __getitem__(cls, item: Any) -> Any:
        return cls

    def _same(cls, *other: Any) -> Any:
        return cls

    __or__ = __ror__ = __mul__ = __rmul__ = __add__ = __radd__ = __sub__ = __rsub__ = _same
    __truediv__ = __floordiv__ = __mod__ = __neg__ = _same

    def _false(cls, other: Any) -> bool:
        return False

    __gt__ = __lt__ = __ge__ = __le__ = _false

    def __iter__(cls) -> Iterator[Any]:
        return iter(())

    def __bool__(cls) -> bool:
        return True

    def __int__(cls) -> int:
        return 0

    __index__ = __len__ = __int__

    def __enter__(cls) -> Any:
        return cls

    def __exit__(cls, *args: Any) -> bool:
        return False


class _StubModule(types.ModuleType):
    def __getattr__(self, name: str) -> Any:
        if _dunder(name):
            raise AttributeError(name)
        made = _Anything(name, (), {})
        setattr(self, name, made)
        return made


class Stubs(importlib.abc.MetaPathFinder, importlib.abc.Loader):
    """Stands in every module under ``roots`` (absent native dependencies) but those ``absent``
    (optional runtimes whose absence the library itself handles)."""

    def __init__(self, roots: tuple[str, ...], absent: tuple[str, ...] = ()) -> None:
        self.roots, self.absent = set(roots), absent

    def find_spec(self, fullname: str, path: Any, target: Any = None) -> importlib.machinery.ModuleSpec | None:
        if fullname.startswith(self.absent) and self.absent:
            raise ModuleNotFoundError(f"No module named {fullname!r}")
        if fullname.split(".")[0] in self.roots:
            return importlib.machinery.ModuleSpec(fullname, self, is_package=True)
        return None

    def create_module(self, spec: importlib.machinery.ModuleSpec) -> types.ModuleType:
        module = _StubModule(spec.name)
        module.__path__ = []
        return module

    def exec_module(self, module: types.ModuleType) -> None:
        return None


@contextmanager
def library_layer(
    library: str, stubbed: tuple[str, ...], bare: tuple[str, ...] = (), absent: tuple[str, ...] = ()
) -> Iterator[None]:
    """The modules of ``library`` (its top package) importable while it lasts: ``stubbed`` roots
    stood in, ``bare`` packages entered without running their ``__init__`` (which imports every
    kernel family the library has); the library's and the stubs' modules are forgotten after."""
    before = set(sys.modules)
    finder = Stubs(stubbed, absent)
    sys.meta_path.insert(0, finder)
    for package in bare:
        spec = importlib.util.find_spec(package)
        assert spec is not None and spec.submodule_search_locations is not None
        module = types.ModuleType(package)
        module.__path__ = list(spec.submodule_search_locations)
        module.__spec__ = spec
        sys.modules[package] = module
    try:
        yield
    finally:
        sys.meta_path.remove(finder)
        roots = {library, *stubbed}
        for name in set(sys.modules) - before:
            if name.split(".")[0] in roots:
                del sys.modules[name]


def on_gpu(monkeypatch: pytest.MonkeyPatch, arch: tuple[int, int], prefixes: tuple[str, ...] = ()) -> None:
    """This process as one GPU of compute capability ``arch`` (module docstring)."""
    properties = types.SimpleNamespace(
        major=arch[0], minor=arch[1], multi_processor_count=132, name=f"stand-in SM{arch[0]}{arch[1]}"
    )
    monkeypatch.setattr(torch.cuda, "get_device_capability", lambda device=None: arch)
    monkeypatch.setattr(torch.cuda, "get_device_properties", lambda device=None: properties)
    monkeypatch.setattr(torch.cuda, "current_stream", lambda device=None: types.SimpleNamespace(cuda_stream=0))
    monkeypatch.setattr(torch.cuda, "current_device", lambda: 0)
    monkeypatch.setattr(torch.cuda, "is_available", lambda: True)
    monkeypatch.setattr(torch.cuda, "is_current_stream_capturing", lambda: False)
    monkeypatch.setattr(torch.version, "cuda", "13.0")
    monkeypatch.setattr(torch.cuda, "device", lambda *args: contextlib.nullcontext())
    monkeypatch.setattr(torch.cuda, "stream", lambda *args: contextlib.nullcontext())
    monkeypatch.setattr(torch.Tensor, "is_cuda", property(lambda self: True), raising=False)
    if wrapper is not None:
        monkeypatch.setattr(wrapper, "capability", lambda device: arch)
    queries = {
        "get_compute_capability": lambda device=None: arch,
        "get_device_sm_count": lambda device=None: 132,
        "get_device_name": lambda device=None: properties.name,
        "get_device_properties": lambda device=None: properties,
    }
    for name, module in list(sys.modules.items()):
        if name.startswith(prefixes) and prefixes:
            for query, answer in queries.items():
                if hasattr(module, query):
                    monkeypatch.setattr(module, query, answer)


def sequences(total: int, cu_seqlens: Tensor | None) -> list[tuple[int, int]]:
    with kernel_side():
        bounds = [0, total] if cu_seqlens is None else [int(x) for x in cu_seqlens]
    return list(itertools.pairwise(bounds))


def grouped(x: Tensor, heads: int) -> Tensor:
    """(T, H, ...) with each head repeated for its group of ``heads``: value head j reads j // G."""
    return x.repeat_interleave(heads // x.shape[1], dim=1)


def recurrence(
    family: str,
    q: Tensor,
    k: Tensor,
    v: Tensor,
    gate: Tensor,
    beta: Tensor,
    scale: float,
    cu: Tensor | None,
    normalised: bool = False,
) -> Tensor:
    """fla's naive recurrence (``kda`` or ``gated_delta_rule``) over (T, H, ...) tokens, each
    sequence of ``cu`` from a zero state; q and k L2-normalised (unless ``normalised``) and
    grouped to v's heads here. (T, HV, V) out, fp32."""
    with kernel_side():
        return _recurrence(family, q, k, v, gate, beta, scale, cu, normalised)


def _recurrence(
    family: str, q: Tensor, k: Tensor, v: Tensor, gate: Tensor, beta: Tensor, scale: float, cu: Any, normalised: bool
) -> Tensor:
    heads = v.shape[1]
    q, k = (grouped(x.float(), heads) for x in (q, k))
    if not normalised:
        q, k = F.normalize(q, dim=-1), F.normalize(k, dim=-1)
    name = {"kda": "naive_recurrent_kda", "gated_delta_rule": "naive_recurrent_gated_delta_rule"}[family]
    outs = []
    for a, b in sequences(q.shape[0], cu):
        qs, ks, vs, gs, bs = (x[None, a:b].float() for x in (q, k, v, gate, beta))
        out, _ = naive(family, name)(qs, ks, vs, g=gs, beta=bs, scale=scale)
        outs.append(out[0].float())
    return torch.cat(outs, dim=0)


def lower_bound_gate(raw: Tensor, a_log: Tensor, dt_bias: Tensor, lower_bound: float) -> Tensor:
    """The log-gate a kernel computes in itself: lower_bound·σ(e^{A_log}·(g + dt_bias))."""
    heads = raw.shape[-2]
    bias = dt_bias.float().reshape(heads, -1)
    return lower_bound * torch.sigmoid(a_log.float().exp()[:, None] * (raw.float() + bias))


_STAND_IN_DEPTH = [0]  # > 0 while a stand-in kernel computes (it reads its inputs on the "device")


@contextmanager
def no_host_sync(monkeypatch: pytest.MonkeyPatch) -> Iterator[None]:
    """Inside, reading a tensor's values on the host raises (what a timed call must not do),
    except inside a stand-in kernel (``kernel_side``)."""
    with monkeypatch.context() as inside:
        for name in ("__float__", "__int__", "__bool__", "item", "tolist", "cpu", "numpy"):
            original = getattr(torch.Tensor, name)

            def sync(self: Tensor, *args: Any, _name: str = name, _original: Any = original, **kwargs: Any) -> Any:
                if _STAND_IN_DEPTH[0]:
                    return _original(self, *args, **kwargs)
                raise AssertionError(f"a host sync inside the timed call: Tensor.{_name}")

            inside.setattr(torch.Tensor, name, sync)
        yield


@contextmanager
def kernel_side() -> Iterator[None]:
    """A stand-in kernel's own computation: it may read values (a GPU kernel reads them on the device)."""
    _STAND_IN_DEPTH[0] += 1
    try:
        yield
    finally:
        _STAND_IN_DEPTH[0] -= 1


def stand_in_kernel(fn: Any) -> Any:
    """A stand-in kernel function: it computes with host reads allowed (``kernel_side``)."""

    @functools.wraps(fn)
    def kernel(*args: Any, **kwargs: Any) -> Any:
        with kernel_side():
            return fn(*args, **kwargs)

    return kernel
