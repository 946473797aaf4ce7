"""Per-frame CPU timing records: what the schedule and ``cpu_scope`` write, what the profiler reads.

A ``FrameTimings`` holds one frame: the raw events (system calls and CPU scopes, with
``time.perf_counter_ns`` start and duration, nesting depth, fixed-step index) plus the per-system and
per-phase totals in nanoseconds, and -- when a profiler runs (engine/profile/trace.py) -- GPU intervals on the
CPU clock and counters. ``TimingHistory`` is the ring buffer of the last N frames (default 600,
ten seconds at 60 Hz) that the profiler panel, the bench scripts and ``trace_export`` read.

The frame being recorded is published through a ``ContextVar`` (``use_timings``) so that ``cpu_scope``
called deep inside a system lands in the right frame without the world or any module global holding it.
"""
from __future__ import annotations

import contextvars
from collections import deque
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from typing import NamedTuple

__all__ = ["TimingEvent", "FrameTimings", "TimingHistory", "current_timings", "use_timings"]


class TimingEvent(NamedTuple):
    """One timed interval. ``kind`` is "system", "scope" or "gpu"; ``phase`` the schedule phase's label (its name;
    DEFORM_FRAME counts as DEFORM) (for "gpu": the group, "render" or "deform"; "" for scopes). A named tuple:
    recording one is a tuple build."""

    name: str
    kind: str
    phase: str
    start_ns: int
    dur_ns: int
    depth: int = 0
    step: int = -1  # fixed-step index within the frame, -1 for once-per-frame work


@dataclass
class FrameTimings:
    """CPU timings of one frame. Totals are in ns; the ``*_ms`` helpers convert."""

    index: int = 0
    start_ns: int = 0
    end_ns: int = 0
    steps: int = 0  # fixed simulation steps run this frame
    errors: int = 0  # system exceptions caught this frame
    events: list[TimingEvent] = field(default_factory=list)
    systems: dict[str, int] = field(default_factory=dict)  # name -> total ns (summed over steps)
    calls: dict[str, int] = field(default_factory=dict)  # name -> number of calls
    system_phase: dict[str, str] = field(default_factory=dict)  # name -> phase label
    phases: dict[str, int] = field(default_factory=dict)  # phase label -> total ns
    scopes: dict[str, int] = field(default_factory=dict)  # cpu_scope name -> total ns
    depth: int = 0  # current nesting depth while recording
    #: GPU intervals placed on the CPU clock (kind "gpu"; filled by a profiler, see engine/profile/trace.py)
    gpu: list[TimingEvent] = field(default_factory=list)
    #: counter name -> {series: value} sampled this frame (spring iterations per mesh, GPU memory per kind)
    counters: dict[str, dict[str, float]] = field(default_factory=dict)

    # ---------------------------------------------------------------- recording
    def record_system(self, name: str, phase: str, start_ns: int, dur_ns: int, step: int = -1) -> None:
        self.events.append(TimingEvent(name, "system", phase, start_ns, dur_ns, self.depth, step))
        self.systems[name] = self.systems.get(name, 0) + dur_ns
        self.calls[name] = self.calls.get(name, 0) + 1
        self.system_phase[name] = phase

    def record_phase(self, phase: str, dur_ns: int) -> None:
        self.phases[phase] = self.phases.get(phase, 0) + dur_ns

    def record_scope(self, name: str, start_ns: int, dur_ns: int, depth: int) -> None:
        self.events.append(TimingEvent(name, "scope", "", start_ns, dur_ns, depth, -1))
        self.scopes[name] = self.scopes.get(name, 0) + dur_ns

    def record_gpu(self, name: str, start_ns: int, dur_ns: int, *, group: str = "") -> None:
        """A GPU interval (a renderer pass, a deformer stage) already placed on the CPU clock; ``group``
        ("render", "deform") goes into the event's phase field."""
        self.gpu.append(TimingEvent(name, "gpu", group, int(start_ns), max(0, int(dur_ns)), 0, -1))

    def record_counter(self, name: str, values: dict[str, float]) -> None:
        """Sample a counter this frame: ``{series: value}`` (e.g. iterations per mesh)."""
        self.counters[name] = {str(k): float(v) for k, v in values.items()}

    # ---------------------------------------------------------------- reading
    def gpu_ms(self, group: str | None = None) -> dict[str, float]:
        """GPU ms per interval name this frame (summed when a name repeats), optionally one group only."""
        out: dict[str, float] = {}
        for e in self.gpu:
            if group is None or e.phase == group:
                out[e.name] = out.get(e.name, 0.0) + e.dur_ns / 1e6
        return out

    @property
    def total_ns(self) -> int:
        return max(0, self.end_ns - self.start_ns)

    @property
    def total_ms(self) -> float:
        return self.total_ns / 1e6

    def system_ms(self, name: str) -> float:
        """Total ms of a system this frame (0.0 when it did not run)."""
        return self.systems.get(name, 0) / 1e6

    def phase_ms(self, phase: object) -> float:
        """Total ms of a phase this frame; ``phase`` is a label or an enum member (0.0 when it did not run)."""
        return self.phases.get(_phase_key(phase), 0) / 1e6

    def scope_ms(self, name: str) -> float:
        return self.scopes.get(name, 0) / 1e6


class TimingHistory:
    """Ring buffer of the last ``capacity`` frames of timings (oldest first when iterated)."""

    def __init__(self, capacity: int = 600) -> None:
        if not isinstance(capacity, int) or isinstance(capacity, bool) or capacity < 1:
            raise ValueError(f"timing history capacity must be an int >= 1, got {capacity!r}")
        self._frames: deque[FrameTimings] = deque(maxlen=capacity)

    @property
    def capacity(self) -> int:
        return self._frames.maxlen or 0

    def append(self, frame: FrameTimings) -> None:
        self._frames.append(frame)

    def clear(self) -> None:
        self._frames.clear()

    @property
    def last(self) -> FrameTimings | None:
        return self._frames[-1] if self._frames else None

    def __len__(self) -> int:
        return len(self._frames)

    def __iter__(self) -> Iterator[FrameTimings]:
        return iter(self._frames)

    def __getitem__(self, i: int) -> FrameTimings:
        return self._frames[i]

    def frame_ms(self) -> list[float]:
        """Total ms of every stored frame, oldest first."""
        return [f.total_ms for f in self._frames]

    def system_ms(self, name: str) -> list[float]:
        """Ms of one system in each stored frame where it ran (frames with zero fixed steps skip it)."""
        return [f.systems[name] / 1e6 for f in self._frames if name in f.systems]

    def phase_ms(self, phase: object) -> list[float]:
        key = _phase_key(phase)
        return [f.phases[key] / 1e6 for f in self._frames if key in f.phases]

    def system_names(self) -> list[str]:
        """Every system name seen in the stored frames, in first-seen order."""
        seen: dict[str, None] = {}
        for f in self._frames:
            for n in f.systems:
                seen.setdefault(n, None)
        return list(seen)


def _phase_key(phase: object) -> str:
    """The key of ``phase`` in ``FrameTimings.phases``: a Phase member's label (engine.ecs.schedule), another enum
    member's name, or the string itself."""
    return str(getattr(phase, "label", None) or getattr(phase, "name", phase))


_CURRENT: contextvars.ContextVar[FrameTimings | None] = contextvars.ContextVar("engine_frame_timings", default=None)


#: the frame being recorded (set by the schedule while it runs), or None outside a frame (the ContextVar's own
#: ``get``: no Python call in between, since cpu_scope asks on every entry)
current_timings: Callable[[], FrameTimings | None] = _CURRENT.get


@contextmanager
def use_timings(frame: FrameTimings | None) -> Iterator[FrameTimings | None]:
    """Make ``frame`` the target of ``cpu_scope`` for the duration of the block."""
    token = _CURRENT.set(frame)
    try:
        yield frame
    finally:
        _CURRENT.reset(token)
