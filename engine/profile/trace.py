"""Perfetto / chrome://tracing traces of the frame, and the profiler that fills the GPU side of the timings.

:class:`Profiler` turns profiling on for a :class:`engine.Session` (``Profiler(session)``; ``detach()`` turns it
off); it takes what it needs of a session through the :class:`ProfiledSession` interface. It adds two systems to
the one schedule and keeps every frame recorded while it is attached:

* ``profile_gpu_mark`` (RENDER, before ``render_system``, after the frame's deformation in DEFORM_FRAME): a GL
  timestamp query where the renderer's GPU work of the frame starts (engine/profile/gpuclock.py);
* ``profile_collect`` (UI): puts the GPU intervals on the CPU clock into the frame's ``FrameTimings.gpu``:
  the renderer's passes (its timer-query readings, which describe the frame ``latency`` renders earlier, so
  they are placed at that frame's timestamp, one after another in pass order) and the deformer graph's stages
  (timed by ``DeformerGraph.run(profile=True)``, which finishes the GPU around each stage, so they lie inside
  the CPU scope ``deformer graph``); and samples two counters: ``spring iterations`` per mesh this frame and
  ``deformer GPU memory (MiB)`` per buffer kind.

Timing the deformer stages serialises the GPU (a ``glFinish`` around each stage) and the spring counter reads
a status record back per mesh: a profiled frame is slower than a plain one. Nothing of this runs unless a
Profiler is attached; the schedule's CPU timings (per system, per phase, ``cpu_scope``) are always recorded.

:func:`write_trace` writes frames as the Chrome trace-event format (a JSON object with ``traceEvents``, times in
microseconds from the first event) that https://ui.perfetto.dev and chrome://tracing open:

* thread "CPU main" (tid 1): one ``X`` event named ``frame`` per frame; inside it one event per phase run (the
  fixed-step phases once per step, ``args.step``), inside those one per system call, inside those the
  ``cpu_scope`` blocks: complete events that nest exactly (each lies within its parent);
* thread "GPU render passes" (tid 2) and "GPU deformer stages" (tid 3): the GPU intervals;
* counters (``C`` events) at the end of each frame: spring iterations (one track per mesh) and the deformer's
  GPU memory as ONE total track (Perfetto draws one track per counter argument; the per-buffer breakdown, a
  dozen tracks, stays in the frame's timings and the overlay's memory table).
"""
from __future__ import annotations

import json
from collections.abc import Callable, Iterable
from pathlib import Path
from typing import TYPE_CHECKING, Any, Protocol

from engine.profile.gpuclock import GpuClock
from engine.profile.timings import FrameTimings, TimingEvent, current_timings

if TYPE_CHECKING:
    from engine.ecs import Phase, Schedule, World

__all__ = ["Profiler", "ProfiledSession", "trace_events", "write_trace", "phase_runs", "GRAPH_SCOPE", "CPU_TID",
           "GPU_TIDS", "SPRING_COUNTER", "MEMORY_COUNTER"]

#: the cpu_scope engine/frame.py opens around the deformer graph's dispatch
GRAPH_SCOPE = "deformer graph"
SPRING_COUNTER = "spring iterations"
MEMORY_COUNTER = "deformer GPU memory (MiB)"
CPU_TID = 1
#: GPU group -> (thread id, thread name)
GPU_TIDS = {"render": (2, "GPU render passes"), "deform": (3, "GPU deformer stages")}
_GPU_PREFIX = "gpu:"  # scopes engine.gpu.timers.record_gpu_timings writes at the frame start (not CPU work)


class ProfiledSession(Protocol):
    """What a :class:`Profiler` needs of a session (:class:`engine.Session` provides it): the schedule it adds its
    systems to (``add_system``) and removes them from, the GL context for its timestamp queries, the renderer and
    the view (``enabled``) whose passes it places, the scene meshes (``profile_graph``, ``instances``,
    ``settings``, ``assets``) and the deformer graph (``last_timings``, ``gpu_bytes()``, ``spring_status()``) it
    reads stage times, memory and spring iterations from."""

    @property
    def schedule(self) -> Schedule: ...

    @property
    def ctx(self) -> Any: ...  # moderngl.Context, or None without GL

    @property
    def renderer(self) -> Any: ...  # engine.render.renderer.SceneRenderer or None

    @property
    def view(self) -> Any: ...  # engine.frame.View

    @property
    def meshes(self) -> Any: ...  # engine.scene.SceneMeshes

    @property
    def graph(self) -> Any: ...  # engine.skinning.gpu.graph.DeformerGraph or None (cpu device)

    def add_system(self, phase: Phase, fn: Callable[[World], None], **kwargs: Any) -> str: ...


def phase_runs(frame: FrameTimings) -> list[TimingEvent]:
    """One interval per phase run of the frame (a fixed-step phase once per step): from its first system's
    start to its last system's end, so every system of the run lies inside it."""
    spans: dict[tuple[str, int], list[int]] = {}
    for e in frame.events:
        if e.kind != "system":
            continue
        key = (e.phase, e.step)
        span = spans.get(key)
        if span is None:
            spans[key] = [e.start_ns, e.start_ns + e.dur_ns]
        else:
            span[0] = min(span[0], e.start_ns)
            span[1] = max(span[1], e.start_ns + e.dur_ns)
    return [TimingEvent(p, "phase", p, lo, hi - lo, 0, step) for (p, step), (lo, hi) in spans.items()]


def trace_events(frames: Iterable[FrameTimings], *, process: str = "skinengine",
                 pid: int = 1) -> list[dict[str, Any]]:
    """The trace events of ``frames`` (see the module docstring), metadata first."""
    frames = list(frames)
    events: list[dict[str, Any]] = [
        {"name": "process_name", "ph": "M", "pid": pid, "tid": 0, "args": {"name": process}},
        {"name": "thread_name", "ph": "M", "pid": pid, "tid": CPU_TID, "args": {"name": "CPU main"}},
        {"name": "thread_sort_index", "ph": "M", "pid": pid, "tid": CPU_TID, "args": {"sort_index": 0}},
    ]
    for tid, label in GPU_TIDS.values():
        events.append({"name": "thread_name", "ph": "M", "pid": pid, "tid": tid, "args": {"name": label}})
        events.append({"name": "thread_sort_index", "ph": "M", "pid": pid, "tid": tid, "args": {"sort_index": tid}})
    starts = [f.start_ns for f in frames] + [g.start_ns for f in frames for g in f.gpu]
    t0 = min(starts, default=0)

    def us(ns: int) -> float:
        return (ns - t0) / 1000.0

    def complete(name: str, cat: str, tid: int, start: int, dur: int, args: dict[str, Any]) -> dict[str, Any]:
        return {"name": name, "cat": cat, "ph": "X", "pid": pid, "tid": tid, "ts": us(start),
                "dur": max(0, dur) / 1000.0, "args": args}

    gpu_end: dict[int, int] = {}
    for f in frames:
        events.append(complete("frame", "frame", CPU_TID, f.start_ns, f.total_ns,
                               {"index": f.index, "steps": f.steps, "errors": f.errors}))
        cpu = [(e, "phase") for e in phase_runs(f)]
        cpu += [(e, "system") for e in f.events if e.kind == "system"]
        cpu += [(e, "scope") for e in f.events if e.kind == "scope" and not e.name.startswith(_GPU_PREFIX)]
        # parents before children at equal start: phase, system, then scopes by depth
        rank = {"phase": 0, "system": 1, "scope": 2}
        cpu.sort(key=lambda item: (item[0].start_ns, rank[item[1]], item[0].depth, -item[0].dur_ns))
        for e, kind in cpu:
            args: dict[str, Any] = {}
            if e.step >= 0:
                args["step"] = e.step
            if kind == "system":
                args["phase"] = e.phase
            events.append(complete(e.name, kind, CPU_TID, e.start_ns, e.dur_ns, args))
        for g in sorted(f.gpu, key=lambda g: g.start_ns):
            tid = GPU_TIDS.get(g.phase, GPU_TIDS["render"])[0]
            start = max(g.start_ns, gpu_end.get(tid, g.start_ns))  # one GPU queue: intervals never overlap
            gpu_end[tid] = start + g.dur_ns
            events.append(complete(g.name, f"gpu.{g.phase or 'render'}", tid, start, g.dur_ns,
                                   {"frame": f.index, "ms": g.dur_ns / 1e6}))
        for name, series in f.counters.items():
            values = dict(series)
            if name == MEMORY_COUNTER and "total" in values:
                values = {"total": values["total"]}
            events.append({"name": name, "ph": "C", "pid": pid, "tid": CPU_TID, "ts": us(f.end_ns or f.start_ns),
                           "args": values})
    return events


def write_trace(frames: Iterable[FrameTimings], path: str | Path) -> Path:
    """Write ``frames`` as a Chrome trace JSON file (parents created); return the path."""
    out = Path(path)
    if out.suffix.lower() != ".json":
        raise ValueError(f"the trace file must end in .json, got {out.name!r}")
    data = {"traceEvents": trace_events(frames), "displayTimeUnit": "ms",
            "otherData": {"producer": "skinengine engine.profile.trace"}}
    out.parent.mkdir(parents=True, exist_ok=True)
    with out.open("w", encoding="utf-8") as fh:
        json.dump(data, fh)
    return out


class Profiler:
    """Profiling on for a session: GPU intervals and counters in every frame's timings, frames kept for a
    trace (see the module docstring). ``keep``: how many frames to keep (None: all since attaching).

    ``deformer_stages``: time every deformer stage (serialises the GPU); ``spring_counters``: read back each
    spring mesh's iteration count every frame."""

    MARK = "profile_gpu_mark"
    COLLECT = "profile_collect"

    def __init__(self, session: ProfiledSession, *, deformer_stages: bool = True, spring_counters: bool = True,
                 keep: int | None = None) -> None:
        if keep is not None and (isinstance(keep, bool) or not isinstance(keep, int) or keep < 1):
            raise ValueError(f"keep must be None or an int >= 1, got {keep!r}")
        if self.MARK in session.schedule or self.COLLECT in session.schedule:
            raise ValueError("this session already has a Profiler attached")
        self.session = session
        self.deformer_stages = bool(deformer_stages)
        self.spring_counters = bool(spring_counters)
        self.keep = keep
        self.frames: list[FrameTimings] = []
        self.clock = GpuClock(session.ctx)
        self._marks: dict[int, tuple[int | None, int]] = {}  # renderer frame -> (timestamp ticket, cpu ns)
        self._render_frame = -1
        self._attached = True
        from engine.ecs import Phase

        renderer_systems = "render_system" in session.schedule
        # in RENDER, so after the frame's deformation (DEFORM_FRAME) by the phase order
        session.add_system(Phase.RENDER, self._mark, name=self.MARK,
                           before="render_system" if renderer_systems else None)
        session.add_system(Phase.UI, self._collect, name=self.COLLECT)
        session.meshes.profile_graph = self.deformer_stages

    # -- lifetime ------------------------------------------------------------------------------------------
    def __enter__(self) -> Profiler:
        return self

    def __exit__(self, *exc: object) -> None:
        self.detach()

    def detach(self) -> None:
        """Remove the profiler's systems and give back its queries (the recorded frames stay). Idempotent."""
        if not self._attached:
            return
        self._attached = False
        s = self.session
        for name in (self.MARK, self.COLLECT):
            if name in s.schedule:
                s.schedule.remove_system(name)
        s.meshes.profile_graph = False
        for ticket, _cpu in self._marks.values():
            self.clock.forget(ticket)
        self._marks.clear()
        if s.ctx is not None:
            self.clock.release()

    def write(self, path: str | Path) -> Path:
        """Write the recorded frames as a trace (:func:`write_trace`)."""
        return write_trace(self.frames, path)

    # -- systems -------------------------------------------------------------------------------------------
    def _renderer(self) -> Any:
        view = self.session.view
        return self.session.renderer if view.enabled else None

    def _mark(self, world: World) -> None:
        r = self._renderer()
        if r is None:
            return
        import time

        self._marks[r.timers.frame] = (self.clock.mark(), time.perf_counter_ns())

    def _collect(self, world: World) -> None:
        frame = current_timings()
        if frame is None:
            return
        s = self.session
        self._collect_deformer(frame)
        r = s.renderer
        if r is not None and r.timers.frame != self._render_frame:
            self._render_frame = r.timers.frame
            self._collect_passes(frame, r)
        if s.graph is not None:
            sizes = s.graph.gpu_bytes()
            if sizes:
                mib = {k: v / 2 ** 20 for k, v in sorted(sizes.items())}
                mib["total"] = sum(sizes.values()) / 2 ** 20
                frame.record_counter(MEMORY_COUNTER, mib)
            if self.spring_counters:
                its = self.spring_iterations()
                if its:
                    frame.record_counter(SPRING_COUNTER, its)
        self.frames.append(frame)
        if self.keep is not None and len(self.frames) > self.keep:
            del self.frames[: len(self.frames) - self.keep]

    def _collect_deformer(self, frame: FrameTimings) -> None:
        graph = self.session.graph
        if graph is None or not self.deformer_stages:
            return
        scopes = [e for e in frame.events if e.kind == "scope" and e.name == GRAPH_SCOPE]
        if not scopes:
            return  # the graph did not run this frame
        t = scopes[-1].start_ns + int(graph.last_timings.get("upload", 0.0) * 1e6)
        for name, ms in graph.last_timings.items():
            if name == "upload":
                continue
            dur = int(round(ms * 1e6))
            frame.record_gpu(name, t, dur, group="deform")
            t += dur

    def _collect_passes(self, frame: FrameTimings, r: Any) -> None:
        measured = r.timers.frame - 1 - r.timers.latency  # the renderer frame its readings describe
        for k in [k for k in self._marks if k < measured]:
            self.clock.forget(self._marks.pop(k)[0])
        mark = self._marks.get(measured)
        if mark is None:
            return
        ticket, cpu_ns = mark
        start = self.clock.read(ticket, self.clock.now_offset_ns()) if ticket is not None else None
        if start is None:
            self.clock.forget(ticket)
            start = cpu_ns
        del self._marks[measured]
        readings = {e.name[len(_GPU_PREFIX):]: e.dur_ns for e in frame.events
                    if e.kind == "scope" and e.name.startswith(_GPU_PREFIX)}
        t = start
        for name in sorted(readings, key=lambda n: r.timers.passes.index(n) if n in r.timers.passes else 99):
            frame.record_gpu(name, t, readings[name], group="render")
            t += readings[name]

    def spring_iterations(self) -> dict[str, float]:
        """Iterations of the last spring solve of every spring mesh (``name#entity/mesh.prim``; reads back)."""
        s = self.session
        out: dict[str, float] = {}
        for entity, rows in s.meshes.instances.items():
            settings = s.meshes.settings.get(entity)
            if settings is None or (settings.graph is None and "spring" not in settings.deformer):
                continue
            name = s.meshes.assets[entity].name
            for inst in rows:
                if inst.deform is None:
                    continue
                try:
                    st = s.graph.spring_status(inst.deform)
                except ValueError:
                    continue
                out[f"{name}#{entity}/{inst.key.mesh}.{inst.key.primitive}"] = float(st["iterations"])
        return out
