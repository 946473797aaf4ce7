"""Per-pass GPU timer scopes from GL timer queries, read back a few frames late so they never stall.

Each declared pass owns a ring of ``latency + 1`` time-elapsed queries (created up front, not while
drawing). Frame f times pass P with query ``f % n``; at the end of frame f the query of frame
``f - latency`` is read (the GPU finished it long ago), so reading never waits for the current frame.
Results are exposed as ``ms`` (latest reading per pass) and ``smoothed_ms`` (exponential average).
"""
from __future__ import annotations

import contextlib
from typing import Iterator, Sequence

from engine.render.resources import GpuResources


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

    def end_frame(self) -> None:
        """Read the queries issued ``latency`` frames ago (finished on the GPU by now)."""
        if not self._in_frame:
            raise RuntimeError("end_frame() without begin_frame()")
        self._in_frame = False
        self.frame += 1
        old = self.frame % (self.latency + 1)  # the slot the next frame reuses = oldest frame's slot
        for p in self.passes:
            if self._issued[p][old]:
                ms = self._queries[p][old].elapsed / 1e6
                self._issued[p][old] = False
                self.ms[p] = ms
                prev = self.smoothed_ms.get(p)
                self.smoothed_ms[p] = ms if prev is None else prev + self.smoothing * (ms - prev)

    def release(self) -> None:
        for qs in self._queries.values():
            for q in qs:
                self.resources.release(q)
        self._queries.clear()
