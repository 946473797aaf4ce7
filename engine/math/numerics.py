"""Small numeric helpers shared by the engine's numpy code (quaternions, transforms, meshes, skinning)."""
from __future__ import annotations

import functools
from collections.abc import Callable
from typing import Any, TypeVar

import numpy as np

__all__ = ["quiet_underflow"]

_F = TypeVar("_F", bound=Callable[..., Any])


def quiet_underflow(fn: _F) -> _F:
    """Run ``fn`` with float underflow ignored.

    Animation and mesh data hold components like 1e-23 (Fox.glb) and float32 products of tiny coordinates
    flush to zero; that is harmless, but an ``np.errstate(all="raise")`` caller (the test suite) would otherwise
    see FloatingPointError. Overflow, division by zero and invalid operations still follow the caller's setting.
    """

    @functools.wraps(fn)
    def wrapper(*args: Any, **kwargs: Any) -> Any:
        with np.errstate(under="ignore"):
            return fn(*args, **kwargs)

    return wrapper  # type: ignore[return-value]
