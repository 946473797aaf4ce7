"""GPU timestamps on the CPU clock: GL_TIMESTAMP queries (``glQueryCounter``) read back a few frames late.

moderngl exposes time-elapsed queries only; the trace wants to know *when* the GPU ran a frame's passes, so
this module reaches the three GL 3.3 entry points it needs through the context's own function loader:

* ``now_offset_ns()``: ``perf_counter_ns() - glGetInteger64v(GL_TIMESTAMP)``; both clocks are read "now"
  (the GL query does not wait for queued work), so adding it to a GPU timestamp gives CPU-clock time;
* ``mark()`` issues a timestamp query into the command stream (the GPU writes its clock when it gets there)
  and returns a ticket; ``read(ticket)`` returns that time on the CPU clock once the GPU has passed it
  (``None`` while it has not; reading never waits).

Where the loader lacks the functions (a context without a loader, an old driver), ``available`` is False and
the profiler falls back to CPU submit times.
"""
from __future__ import annotations

import ctypes
import time
from typing import Any

from engine.gpu.glfunc import gl_function

__all__ = ["GpuClock"]

GL_TIMESTAMP = 0x8E28
GL_QUERY_RESULT = 0x8866
GL_QUERY_RESULT_AVAILABLE = 0x8867

_U = ctypes.c_uint
_I64P = ctypes.POINTER(ctypes.c_int64)
_SIGNATURES: dict[str, tuple[Any, ...]] = {
    "glGetInteger64v": (_U, _I64P),
    "glQueryCounter": (_U, _U),
    "glGetQueryObjecti64v": (_U, _U, _I64P),
    "glGenQueries": (ctypes.c_int, ctypes.POINTER(_U)),
    "glDeleteQueries": (ctypes.c_int, ctypes.POINTER(_U)),
}


def _entry_points(ctx: Any) -> dict[str, Any] | None:
    out = {}
    for name, args in _SIGNATURES.items():
        fn = gl_function(ctx, name, *args)
        if fn is None:
            return None
        out[name] = fn
    return out


class GpuClock:
    """GL timestamp queries converted to ``time.perf_counter_ns`` time (see the module docstring)."""

    def __init__(self, ctx: Any) -> None:
        self._gl = _entry_points(ctx) if ctx is not None else None
        self._free: list[int] = []
        self._live: set[int] = set()

    @property
    def available(self) -> bool:
        return self._gl is not None

    def gpu_now_ns(self) -> int:
        """The GPU's clock now (ns; its own epoch)."""
        if self._gl is None:
            raise RuntimeError("GL timestamps are not available on this context")
        v = ctypes.c_int64()
        self._gl["glGetInteger64v"](GL_TIMESTAMP, ctypes.byref(v))
        return int(v.value)

    def now_offset_ns(self) -> int:
        """CPU clock minus GPU clock, both read now."""
        gpu = self.gpu_now_ns()
        return time.perf_counter_ns() - gpu

    def mark(self) -> int | None:
        """Issue a timestamp query at this point of the command stream; its ticket (None when unavailable)."""
        if self._gl is None:
            return None
        if self._free:
            q = self._free.pop()
        else:
            ids = (_U * 1)()
            self._gl["glGenQueries"](1, ids)
            q = int(ids[0])
        self._gl["glQueryCounter"](q, GL_TIMESTAMP)
        self._live.add(q)
        return q

    def read(self, ticket: int | None, offset_ns: int) -> int | None:
        """The ticket's GPU time on the CPU clock (GPU ns + ``offset_ns``), or None when the GPU has not got
        there yet (the ticket stays valid) or the ticket is None. A read ticket is recycled."""
        if ticket is None or self._gl is None:
            return None
        if ticket not in self._live:
            raise ValueError(f"unknown or already read timestamp ticket {ticket!r}")
        v = ctypes.c_int64()
        self._gl["glGetQueryObjecti64v"](ticket, GL_QUERY_RESULT_AVAILABLE, ctypes.byref(v))
        if not v.value:
            return None
        self._gl["glGetQueryObjecti64v"](ticket, GL_QUERY_RESULT, ctypes.byref(v))
        self._live.discard(ticket)
        self._free.append(ticket)
        return int(v.value) + int(offset_ns)

    def forget(self, ticket: int | None) -> None:
        """Give back a ticket that will not be read."""
        if ticket is not None and ticket in self._live:
            self._live.discard(ticket)
            self._free.append(ticket)

    def release(self) -> None:
        """Delete every query (the context must still be current)."""
        if self._gl is None:
            return
        ids = list(self._free) + list(self._live)
        if ids:
            arr = (_U * len(ids))(*ids)
            self._gl["glDeleteQueries"](len(ids), arr)
        self._free.clear()
        self._live.clear()
