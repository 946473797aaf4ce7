"""The profiler panel: what the schedule's timing history says about the last frames, drawn with imgui + implot.

:class:`ProfileSnapshot` is the panel's model, computed from a :class:`~engine.profile.TimingHistory` (the
numbers on screen are exactly these; tests compare them with the history):

* the rolling frame-time graph over the last ``window`` frames: CPU frame (the schedule's frame) and GPU
  frame (sum of the frame's GPU intervals: renderer passes and deformer stages, filled in by
  :class:`engine.profile.trace.Profiler`), with the 60 Hz and 90 Hz budgets (16.7 and 11.1 ms);
* p50 / p95 / p99 of both over the window (numpy's linear percentiles);
* the current frame (the last finished one): every system's CPU ms and every GPU pass / deformer stage's ms,
  as a flame (CPU: systems and scopes at their real offsets in the frame; GPU: intervals one after another)
  and as tables, the slowest of each named at the top;
* spring iterations per mesh this frame and the deformer's GPU memory per buffer kind (the counters).

:class:`ProfilerPanel` draws a snapshot; ``frozen`` keeps the snapshot of the moment it was frozen (inspect a
spike while the scene runs on).
"""
from __future__ import annotations

import time
from dataclasses import dataclass, field

import numpy as np

from engine.profile.timings import FrameTimings, TimingHistory
from engine.profile.trace import MEMORY_COUNTER, SPRING_COUNTER

__all__ = ["ProfileSnapshot", "ProfilerPanel", "BUDGETS_MS", "PERCENTILES"]

#: frame budgets drawn on the graph: (label, ms)
BUDGETS_MS = (("60 Hz", 1000.0 / 60.0), ("90 Hz", 1000.0 / 90.0))
PERCENTILES = (50.0, 95.0, 99.0)


def _percentiles(a: np.ndarray) -> tuple[float, float, float]:
    if a.size == 0:
        return float("nan"), float("nan"), float("nan")
    p = np.percentile(a, PERCENTILES)
    return float(p[0]), float(p[1]), float(p[2])


@dataclass
class ProfileSnapshot:
    """The panel's numbers (see the module docstring). ``frame`` is the current frame (None: no frame yet)."""

    frame: FrameTimings | None
    cpu_ms: np.ndarray  # per frame of the window, oldest first
    gpu_ms: np.ndarray
    cpu_pct: tuple[float, float, float]
    gpu_pct: tuple[float, float, float]
    systems: list[tuple[str, str, float]] = field(default_factory=list)  # (name, phase, ms) in run order
    gpu: list[tuple[str, str, float]] = field(default_factory=list)  # (group, name, ms)
    springs: dict[str, float] = field(default_factory=dict)
    memory_mib: dict[str, float] = field(default_factory=dict)

    @classmethod
    def of(cls, history: TimingHistory, window: int = 240) -> ProfileSnapshot:
        if isinstance(window, bool) or not isinstance(window, int) or window < 1:
            raise ValueError(f"window must be an int >= 1 frames, got {window!r}")
        frames = list(history)[-window:]
        cpu = np.array([f.total_ms for f in frames], np.float64)
        gpu = np.array([sum(e.dur_ns for e in f.gpu) / 1e6 for f in frames], np.float64)
        last = frames[-1] if frames else None
        snap = cls(last, cpu, gpu, _percentiles(cpu), _percentiles(gpu))
        if last is not None:
            snap.systems = [(n, last.system_phase.get(n, ""), last.system_ms(n)) for n in last.systems]
            totals: dict[tuple[str, str], float] = {}
            for e in last.gpu:
                totals[(e.phase, e.name)] = totals.get((e.phase, e.name), 0.0) + e.dur_ns / 1e6
            snap.gpu = [(g, n, ms) for (g, n), ms in totals.items()]
            snap.springs = dict(last.counters.get(SPRING_COUNTER, {}))
            snap.memory_mib = dict(last.counters.get(MEMORY_COUNTER, {}))
        return snap

    @property
    def slowest_system(self) -> tuple[str, float] | None:
        if not self.systems:
            return None
        name, _phase, ms = max(self.systems, key=lambda r: r[2])
        return name, ms

    @property
    def slowest_gpu(self) -> tuple[str, float] | None:
        if not self.gpu:
            return None
        group, name, ms = max(self.gpu, key=lambda r: r[2])
        return f"{group}:{name}", ms


_CPU_COLOURS = {"INPUT": 0xFF8C7B5A, "TOOLS": 0xFF5A8C7B, "ANIMATION": 0xFF4FA36B, "SKELETON": 0xFF3F8FB8,
                "DEFORM": 0xFFB85C3F, "RENDER": 0xFF3F5FC8, "UI": 0xFF9A4FA3, "": 0xFF808080}
_GPU_COLOURS = {"render": 0xFF2F9FD8, "deform": 0xFF2FB86F}


class ProfilerPanel:
    """Draws a :class:`ProfileSnapshot` of ``history`` (imgui calls; see game/ui/imgui_layer.py)."""

    def __init__(self, history: TimingHistory, *, window: int = 240, title: str = "Profiler (P)",
                 refresh_s: float = 0.0) -> None:
        if isinstance(refresh_s, bool) or not isinstance(refresh_s, (int, float)) or not 0.0 <= refresh_s <= 10.0:
            raise ValueError(f"refresh_s must be seconds in [0, 10], got {refresh_s!r}")
        self.history = history
        self.window = window
        self.title = title
        self.frozen = False
        #: seconds between two snapshots (0: every frame); the panel's pixels change only then, so the
        #: cached UI layer (game/ui/ui_cache.py) redraws it at that rate and reuses it in between
        self.refresh_s = float(refresh_s)
        self._taken = time.perf_counter()
        self.snapshot = ProfileSnapshot.of(history, window)

    def toggle_freeze(self) -> bool:
        self.frozen = not self.frozen
        return self.frozen

    def update(self) -> ProfileSnapshot:
        """A fresh snapshot of the history (kept as is while frozen, and for ``refresh_s`` after the last)."""
        now = time.perf_counter()
        if not self.frozen and (self.refresh_s == 0.0 or now - self._taken >= self.refresh_s):
            self.snapshot = ProfileSnapshot.of(self.history, self.window)
            self._taken = now
        return self.snapshot

    # -- drawing -------------------------------------------------------------------------------------------
    def draw(self, *, pos: tuple[float, float] = (8.0, 8.0), size: tuple[float, float] = (440.0, 600.0)) -> None:
        from imgui_bundle import imgui

        snap = self.update()
        imgui.set_next_window_pos(imgui.ImVec2(*pos), imgui.Cond_.first_use_ever)
        imgui.set_next_window_size(imgui.ImVec2(*size), imgui.Cond_.first_use_ever)
        imgui.set_next_window_bg_alpha(0.82)
        opened, _ = imgui.begin(self.title)
        try:
            if opened:
                self._draw_body(snap)
        finally:
            imgui.end()

    def _draw_body(self, snap: ProfileSnapshot) -> None:
        from imgui_bundle import imgui

        f = snap.frame
        if f is None:
            imgui.text("no frame recorded yet")
            return
        _, self.frozen = imgui.checkbox("freeze (F)", self.frozen)
        gpu_now = snap.gpu_ms[-1] if snap.gpu_ms.size else 0.0
        imgui.text(f"frame {f.index}: CPU {f.total_ms:.2f} ms, GPU {gpu_now:.2f} ms, {f.steps} step(s)")
        slow_cpu, slow_gpu = snap.slowest_system, snap.slowest_gpu
        if slow_cpu is not None:
            imgui.text_colored(imgui.ImVec4(1.0, 0.8, 0.3, 1.0), f"slowest system: {slow_cpu[0]} {slow_cpu[1]:.2f} ms")
        if slow_gpu is not None:
            imgui.text_colored(imgui.ImVec4(1.0, 0.8, 0.3, 1.0), f"slowest GPU:    {slow_gpu[0]} {slow_gpu[1]:.2f} ms")
        self._draw_percentiles(snap)
        self._draw_graph(snap)
        self._draw_flame(f)
        self._draw_tables(snap)

    @staticmethod
    def _draw_percentiles(snap: ProfileSnapshot) -> None:
        from imgui_bundle import imgui

        n = snap.cpu_ms.size
        if imgui.begin_table("pct", 4, imgui.TableFlags_.borders_inner_h):
            for head in (f"{n} frames", "p50", "p95", "p99"):
                imgui.table_setup_column(head)
            imgui.table_headers_row()
            for label, pct in (("CPU ms", snap.cpu_pct), ("GPU ms", snap.gpu_pct)):
                imgui.table_next_row()
                imgui.table_next_column()
                imgui.text(label)
                for v in pct:
                    imgui.table_next_column()
                    imgui.text(f"{v:.2f}")
            imgui.end_table()

    @staticmethod
    def _draw_graph(snap: ProfileSnapshot) -> None:
        from imgui_bundle import imgui, implot

        if implot.begin_plot("frame time (ms)", imgui.ImVec2(-1, 150), implot.Flags_.no_mouse_text):
            top = max(20.0, float(np.max(snap.cpu_ms)) * 1.1 if snap.cpu_ms.size else 20.0)
            implot.setup_axes("frame", "ms", implot.AxisFlags_.no_tick_labels, 0)
            implot.setup_axis_limits(implot.ImAxis_.x1, 0, max(len(snap.cpu_ms) - 1, 1), implot.Cond_.always)
            implot.setup_axis_limits(implot.ImAxis_.y1, 0, top, implot.Cond_.always)
            implot.setup_legend(implot.Location_.north_west, implot.LegendFlags_.horizontal)
            if snap.cpu_ms.size:
                implot.plot_line("CPU", snap.cpu_ms)
                implot.plot_line("GPU", snap.gpu_ms)
            for label, ms in BUDGETS_MS:
                implot.plot_inf_lines(f"{label} {ms:.1f}", np.array([ms], np.float64),
                                      implot.Spec(flags=implot.InfLinesFlags_.horizontal))
            implot.end_plot()

    @staticmethod
    def _draw_flame(f: FrameTimings) -> None:
        """The current frame: CPU systems and scopes at their offsets (one row per depth), then the GPU
        intervals one after another, on the frame's width."""
        from imgui_bundle import imgui

        imgui.text("current frame (CPU rows by depth, then GPU)")
        dl = imgui.get_window_draw_list()
        origin = imgui.get_cursor_screen_pos()
        width = max(imgui.get_content_region_avail().x, 10.0)
        row_h = 16.0
        total = max(f.total_ns, 1)
        gpu_total = max(sum(e.dur_ns for e in f.gpu), 1)
        scale = width / max(total, gpu_total)
        rows = 0
        for e in f.events:
            if e.name.startswith("gpu:"):
                continue
            depth = 0 if e.kind == "system" else e.depth
            colour = _CPU_COLOURS.get(e.phase if e.kind == "system" else "", 0xFF808080)
            x0 = origin.x + (e.start_ns - f.start_ns) * scale
            _bar(dl, x0, origin.y + depth * row_h, e.dur_ns * scale, row_h, colour, e.name)
            rows = max(rows, depth + 1)
        x = origin.x
        y = origin.y + rows * row_h + 2
        for e in f.gpu:
            _bar(dl, x, y, e.dur_ns * scale, row_h, _GPU_COLOURS.get(e.phase, 0xFF808080), e.name)
            x += e.dur_ns * scale
        imgui.dummy(imgui.ImVec2(width, (rows + 1) * row_h + 4))

    @staticmethod
    def _draw_tables(snap: ProfileSnapshot) -> None:
        from imgui_bundle import imgui

        flags = imgui.TableFlags_.borders_inner_h | imgui.TableFlags_.row_bg
        if imgui.collapsing_header("CPU per system", imgui.TreeNodeFlags_.default_open) and \
                imgui.begin_table("cpu", 3, flags):
            for name, phase, ms in snap.systems:
                _row(name, phase, f"{ms:.3f}")
            imgui.end_table()
        if imgui.collapsing_header("GPU per pass / stage", imgui.TreeNodeFlags_.default_open) and \
                imgui.begin_table("gpu", 3, flags):
            for group, name, ms in snap.gpu:
                _row(name, group, f"{ms:.3f}")
            imgui.end_table()
        if snap.springs and imgui.collapsing_header("spring iterations", imgui.TreeNodeFlags_.default_open) and \
                imgui.begin_table("springs", 2, flags):
            for mesh, its in snap.springs.items():
                _row(mesh, f"{its:.0f}")
            imgui.end_table()
        if snap.memory_mib and imgui.collapsing_header("deformer GPU memory (MiB)") and \
                imgui.begin_table("memory", 2, flags):
            for kind, mib in snap.memory_mib.items():
                _row(kind, f"{mib:.2f}")
            imgui.end_table()


def _row(*cells: str) -> None:
    from imgui_bundle import imgui

    imgui.table_next_row()
    for c in cells:
        imgui.table_next_column()
        imgui.text(c)


def _bar(dl: object, x: float, y: float, w: float, h: float, colour: int, label: str) -> None:
    from imgui_bundle import imgui

    if w <= 0.5:
        return
    dl.add_rect_filled(imgui.ImVec2(x, y), imgui.ImVec2(x + w, y + h - 1), colour)  # type: ignore[attr-defined]
    if w > 7.0 * len(label) * 0.6:
        dl.push_clip_rect(imgui.ImVec2(x, y), imgui.ImVec2(x + w, y + h), True)  # type: ignore[attr-defined]
        dl.add_text(imgui.ImVec2(x + 2, y + 1), 0xFFFFFFFF, label)  # type: ignore[attr-defined]
        dl.pop_clip_rect()  # type: ignore[attr-defined]
