"""Per-pass GPU timer scopes from GL timer queries, read back a few frames late so they never stall.

Each declared pass owns a ring of ``latency + 1`` time-elapsed queries (created up front, not while
drawing). Frame f times pass P with query ``f % n``; at the end of frame f the query of frame
``f - latency`` is read (the GPU finished it long ago), so reading never waits for the current frame.
Results are exposed as ``ms`` (latest reading per pass) and ``smoothed_ms`` (exponential average).
Passes can be added and removed between frames (the renderer's layers each get one).
:func:`record_gpu_timings` copies such readings into the profiler's ``FrameTimings``.
"""
from __future__ import annotations

import contextlib
from collections.abc import Iterator, Mapping, Sequence
from typing import TYPE_CHECKING

from engine.gpu.resources import GpuResources

if TYPE_CHECKING:
    from engine.profile.timings import FrameTimings


class GpuTimers:
    """Timer scopes for a fixed list of passes: ``with timers.scope("gbuffer"): ...`` inside a frame
    bracketed by ``begin_frame()`` / ``end_frame()``. Scopes cannot nest (GL_TIME_ELAPSED)."""

    def __init__(self, resources: GpuResources, passes: Sequence[str], *, latency: int = 3,
                 smoothing: float = 0.1) -> None:
        if latency < 1:
            raise ValueError(f"latency must be >= 1 frame, got {latency}")
        if not 0.0 < smoothing <= 1.0:
            raise ValueError(f"smoothing must be in (0, 1], got {smoothing}")
        if len(set(passes)) != len(passes) or not passes:
            raise ValueError(f"passes must be distinct names, got {list(passes)}")
        self.resources = resources
        self.passes = tuple(passes)
        self.latency = latency
        self.smoothing = smoothing
        n = latency + 1
        self._queries = {p: [resources.query(time=True, label=f"timer {p} {i}") for i in range(n)] for p in passes}
        self._issued = {p: [False] * n for p in passes}
        self.frame = 0
        self._open: str | None = None
        self._in_frame = False
        self.ms: dict[str, float] = {}
        self.smoothed_ms: dict[str, float] = {}

    def begin_frame(self) -> None:
        if self._in_frame:
            raise RuntimeError("begin_frame() called twice without end_frame()")
        self._in_frame = True
        slot = self.frame % (self.latency + 1)
        for p in self.passes:
            self._issued[p][slot] = False

    @contextlib.contextmanager
    def scope(self, name: str) -> Iterator[None]:
        if name not in self._queries:
            raise ValueError(f"unknown pass {name!r}; declared passes: {list(self.passes)}")
        if self._open is not None:
            raise RuntimeError(f"timer scope {name!r} opened inside {self._open!r}: GL timer scopes cannot nest")
        if not self._in_frame:
            raise RuntimeError("timer scope outside begin_frame()/end_frame()")
        slot = self.frame % (self.latency + 1)
        q = self._queries[name][slot]
        self._open = name
        try:
            with q:
                yield
        finally:
            self._open = None
        self._issued[name][slot] = True

    def add_pass(self, name: str) -> None:
        """Declare one more pass (between frames); its queries are created now, not while drawing."""
        if self._in_frame:
            raise RuntimeError(f"add_pass({name!r}) inside a frame")
        if name in self._queries:
            raise ValueError(f"pass {name!r} is already declared; declared passes: {list(self.passes)}")
        n = self.latency + 1
        self._queries[name] = [self.resources.query(time=True, label=f"timer {name} {i}") for i in range(n)]
        self._issued[name] = [False] * n
        self.passes = self.passes + (name,)

    def remove_pass(self, name: str) -> None:
        """Forget a pass and release its queries (between frames)."""
        if self._in_frame:
            raise RuntimeError(f"remove_pass({name!r}) inside a frame")
        if name not in self._queries:
            raise ValueError(f"unknown pass {name!r}; declared passes: {list(self.passes)}")
        for q in self._queries.pop(name):
            self.resources.release(q)
        del self._issued[name]
        self.passes = tuple(p for p in self.passes if p != name)
        self.ms.pop(name, None)
        self.smoothed_ms.pop(name, None)

    def end_frame(self) -> None:
        """Read the queries issued ``latency`` frames ago (finished on the GPU by now)."""
        if not self._in_frame:
            raise RuntimeError("end_frame() without begin_frame()")
        self._in_frame = False
        self.frame += 1
        old = self.frame % (self.latency + 1)  # the slot the next frame reuses = oldest frame's slot
        for p in self.passes:
            if self._issued[p][old]:
                ns = self._queries[p][old].elapsed
                self._issued[p][old] = False
                if not 0 <= ns < 2 ** 31:  # a 32-bit wrap of a tiny negative reading (seen on llvmpipe): skip it
                    continue
                ms = ns / 1e6
                self.ms[p] = ms
                prev = self.smoothed_ms.get(p)
                self.smoothed_ms[p] = ms if prev is None else prev + self.smoothing * (ms - prev)

    def release(self) -> None:
        for qs in self._queries.values():
            for q in qs:
                self.resources.release(q)
        self._queries.clear()


def record_gpu_timings(timings: FrameTimings, gpu_ms: Mapping[str, float], *, prefix: str = "gpu:") -> None:
    """Copy per-pass GPU milliseconds (e.g. ``SceneRenderer.gpu_ms``, readings a few frames old) into a
    profiler frame as scopes named ``prefix + pass`` (depth 0, starting at the frame's start)."""
    for name, ms in gpu_ms.items():
        if ms is None:
            continue
        if not ms >= 0.0:
            raise ValueError(f"GPU time of pass {name!r} must be >= 0 ms, got {ms!r}")
        timings.record_scope(prefix + name, timings.start_ns, int(round(ms * 1e6)), 0)
