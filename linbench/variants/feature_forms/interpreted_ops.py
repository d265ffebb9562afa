"""Triton builtins as jitted functions, for Triton's interpreter only (triton_interpreter.py's
third bridge): a kernel that reaches a builtin through a name bound at import (fla's
``gather = tl.gather``) gets the interpreter's builtin when it calls one of these, which read
``tl`` from this module's globals, as the interpreter requires. Imported only with the
interpreter on (it imports Triton)."""

from __future__ import annotations

from typing import Any

import triton
import triton.language as tl


@triton.jit
def gather(src: Any, index: Any, axis: Any) -> Any:
    """``tl.gather``, looked up when called (under the interpreter, its own builtin)."""
    return tl.gather(src, index, axis)
