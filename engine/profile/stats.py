"""Frame statistics, CPU scopes and Chrome-trace export.

* ``FrameStats.of(samples_ms)``: count, mean, min, p50, p95, max of a set of millisecond samples
  (percentiles are numpy's default linear interpolation), with ``summary()`` giving the one-line form
  ``frames 120: mean 4.21 ms, p95 6.02 ms, max 9.11 ms`` that the bench scripts and the HUD print.
* ``cpu_scope(name)``: a context manager timing a block with ``time.perf_counter_ns`` into the frame the
  schedule is recording (see ``engine.profile.timings.use_timings``); outside a frame it only runs the
  block. Scopes nest; the depth goes into the trace.
* ``trace_export(frames, path)``: writes the recorded frames as Chrome trace JSON ("X" complete events,
  microseconds), loadable in chrome://tracing or https://ui.perfetto.dev.

Numbers here are measurements to print and compare, never to assert on (tests check the arithmetic).
"""
from __future__ import annotations

import json
import time
from collections.abc import Iterable
from dataclasses import dataclass
from pathlib import Path
from types import TracebackType
from typing import Any

import numpy as np

from engine.profile.timings import FrameTimings, TimingHistory, current_timings

__all__ = ["FrameStats", "cpu_scope", "trace_export", "system_table"]

_now = time.perf_counter_ns  # bound once: a scope's cost is mostly attribute look-ups


@dataclass(frozen=True)
class FrameStats:
    """Summary of millisecond samples. With no samples, count is 0 and the statistics are NaN."""

    count: int
    mean: float
    min: float
    p50: float
    p95: float
    max: float

    @classmethod
    def of(cls, samples_ms: Iterable[float] | np.ndarray) -> FrameStats:
        a = np.asarray(list(samples_ms) if not isinstance(samples_ms, np.ndarray) else samples_ms, np.float64)
        a = a.ravel()
        if a.size == 0:
            nan = float("nan")
            return cls(0, nan, nan, nan, nan, nan)
        if not np.all(np.isfinite(a)):
            bad = a[~np.isfinite(a)][0]
            raise ValueError(f"frame time samples must be finite milliseconds, got {bad!r}")
        p50, p95 = np.percentile(a, [50.0, 95.0])
        return cls(int(a.size), float(a.mean()), float(a.min()), float(p50), float(p95), float(a.max()))

    def summary(self, label: str = "frames") -> str:
        """``frames 120: mean 4.21 ms, p95 6.02 ms, max 9.11 ms`` (``label 0: no samples`` when empty)."""
        if self.count == 0:
            return f"{label} 0: no samples"
        return f"{label} {self.count}: mean {self.mean:.2f} ms, p95 {self.p95:.2f} ms, max {self.max:.2f} ms"


def system_table(history: TimingHistory) -> list[tuple[str, str, FrameStats]]:
    """(system name, phase name, stats of its per-frame ms) for every system in the history, first-seen order."""
    phase_of: dict[str, str] = {}
    for f in history:
        phase_of.update(f.system_phase)
    return [(n, phase_of.get(n, ""), FrameStats.of(history.system_ms(n))) for n in history.system_names()]


class cpu_scope:  # noqa: N801 - used like a function: ``with cpu_scope("name"):``
    """Time a block into the current frame's timings (or into ``timings=`` when given).

    A class rather than a generator-based context manager: it is entered many times per frame and this
    keeps the overhead to two ``perf_counter_ns`` calls and a list append.
    """

    __slots__ = ("name", "_frame", "_start", "_depth", "_elapsed")

    def __init__(self, name: str, *, timings: FrameTimings | None = None) -> None:
        if name.__class__ is not str or not name:
            raise ValueError(f"cpu_scope name must be a non-empty string, got {name!r}")
        self.name = name
        self._frame = timings
        self._elapsed = 0

    def __enter__(self) -> cpu_scope:
        frame = self._frame
        if frame is None:
            frame = self._frame = current_timings()
            if frame is None:  # outside a recorded frame (profiling off): only the two clock reads
                self._start = _now()
                return self
        frame.depth += 1
        self._depth = frame.depth
        self._start = _now()
        return self

    def __exit__(
        self, exc_type: type[BaseException] | None, exc: BaseException | None, tb: TracebackType | None
    ) -> None:
        end = _now()
        self._elapsed = dur = end - self._start
        frame = self._frame
        if frame is not None:
            frame.depth -= 1
            frame.record_scope(self.name, self._start, dur, self._depth)

    @property
    def elapsed_ms(self) -> float:
        """Duration of the last completed block (valid after the ``with``)."""
        return self._elapsed / 1e6


def trace_export(frames: Iterable[FrameTimings] | TimingHistory, path: str | Path, *, pid: int = 1) -> Path:
    """Write ``frames`` as Chrome trace JSON to ``path`` (parents created); return the path.

    Every frame becomes an "X" event named ``frame <index>`` on thread 1 (category "frame"), with its
    systems (category = phase name) and CPU scopes (category "scope") nested inside it by time. Timestamps
    are microseconds from the start of the first exported frame.
    """
    frames = list(frames)
    events: list[dict[str, Any]] = [
        {"name": "process_name", "ph": "M", "pid": pid, "tid": 1, "args": {"name": "engine"}},
        {"name": "thread_name", "ph": "M", "pid": pid, "tid": 1, "args": {"name": "main"}},
    ]
    t0 = min((f.start_ns for f in frames), default=0)

    def us(ns: int) -> float:
        return (ns - t0) / 1000.0

    for f in frames:
        events.append({
            "name": f"frame {f.index}", "cat": "frame", "ph": "X", "pid": pid, "tid": 1,
            "ts": us(f.start_ns), "dur": f.total_ns / 1000.0,
            "args": {"steps": f.steps, "errors": f.errors},
        })
        for e in f.events:
            ev: dict[str, Any] = {
                "name": e.name, "cat": e.phase if e.kind == "system" else "scope", "ph": "X",
                "pid": pid, "tid": 1, "ts": us(e.start_ns), "dur": e.dur_ns / 1000.0,
                "args": {"depth": e.depth},
            }
            if e.step >= 0:
                ev["args"]["step"] = e.step
            events.append(ev)
    out = Path(path)
    out.parent.mkdir(parents=True, exist_ok=True)
    with out.open("w", encoding="utf-8") as fh:
        json.dump({"traceEvents": events, "displayTimeUnit": "ms"}, fh)
    return out
