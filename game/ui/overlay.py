"""The overlay a Session draws over its frame: the profiler panel, the controls help and any extra panels.

    overlay = SessionOverlay(session)        # draws into every frame from now on (headless too)
    overlay.show_profiler = True             # the P key in the demo window
    ...
    overlay.release()

It registers itself in the session's ``view.ui`` list (engine/frame.py: the renderer's ``ui`` pass, drawn into
the frame before it is presented, so it is in screenshots and in the window alike). While the profiler panel
shows, an :class:`engine.profile.trace.Profiler` fills in the GPU side of the timings: the one given (shared,
e.g. with ``--profile``), else one the overlay attaches when the panel is shown and detaches when it is
hidden. The numbers are those of the last finished frame in the schedule's history. The layer draws through
its cached RGBA layer by default (game/ui/ui_cache.py; ``cached=False`` draws straight into the frame), and
``profiler_refresh_s`` lets the profiler panel refresh at its own rate so the cache holds between refreshes.

Docked (``dock=``, a game.ui.dock.DockLayout): the panels dock around a central view (imgui docking), the layout
is kept in ``ini_path`` between runs, ``menu()`` draws the main menu bar first, and the central node's rectangle
becomes the scene camera's ``view_rect`` (``on_view_rect(rect)`` instead, with the rectangle as fractions of
the frame, when the host routes it elsewhere: the editor records it as an action). The profiler and the help
are then dockable windows like the others ("Profiler (P)", "Help (H)").
"""
from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any

from engine.profile.stats import cpu_scope
from game.ui.imgui_layer import ImGuiLayer
from game.ui.profiler import ProfilerPanel

__all__ = ["SessionOverlay"]


class SessionOverlay:
    """Profiler + help + extra panels over a session's frame (see the module docstring)."""

    def __init__(self, session: Any, *, profiler: Any = None, show_profiler: bool = True, show_help: bool = False,
                 help_lines: Sequence[str] = (), window: int = 240, profiler_at: tuple[float, float] = (8.0, 8.0),
                 profiler_refresh_s: float = 0.0, cached: bool = True, dock: Any = None, ini_path: str = "",
                 menu: Callable[[], None] | None = None,
                 on_view_rect: Callable[[tuple[float, float, float, float] | None], None] | None = None) -> None:
        if session.renderer is None:
            raise ValueError("the overlay needs a session with a renderer (Session(render=True))")
        from engine.profile.trace import Profiler

        r = session.renderer
        self.session = session
        self.layer = ImGuiLayer(session.ctx, r.width, r.height, cached=cached, docking=dock is not None,
                                ini_path=ini_path or None)
        #: the docked layout (None: free-floating panels over the whole frame)
        self.dock = dock
        self.menu = menu
        self.on_view_rect = on_view_rect
        #: the scene's rectangle as fractions of the frame (None: the whole frame), as last applied
        self.view_fraction: tuple[float, float, float, float] | None = None
        self._make_profiler = lambda: Profiler(session, spring_counters=True, keep=1)
        self._own_profiler = profiler is None
        self.profiler: Any = profiler
        self.panel = ProfilerPanel(session.schedule.history, window=window, refresh_s=profiler_refresh_s)
        self.profiler_at = (float(profiler_at[0]), float(profiler_at[1]))
        self._show_profiler = False
        self.show_profiler = bool(show_profiler)
        self.show_help = bool(show_help)
        self.help_lines = list(help_lines)
        #: extra panels: functions making imgui calls, drawn after the profiler (the demo's deformer switch)
        self.panels: list[Callable[[], None]] = []
        self._released = False
        session.view.ui.append(self._draw)

    @property
    def show_profiler(self) -> bool:
        """The profiler panel is drawn (the P key). A profiler the overlay made itself is attached only while
        the panel shows (timing the deformer stages serialises the GPU)."""
        return self._show_profiler

    @show_profiler.setter
    def show_profiler(self, on: bool) -> None:
        on = bool(on)
        if self._own_profiler and on and self.profiler is None:
            self.profiler = self._make_profiler()
        elif self._own_profiler and not on and self.profiler is not None:
            self.profiler.detach()
            self.profiler = None
        self._show_profiler = on

    def _draw(self, renderer: Any) -> None:
        with cpu_scope("ui overlay"):
            if (renderer.width, renderer.height) != (self.layer.width, self.layer.height):
                self.layer.resize(renderer.width, renderer.height)
            self.layer.draw(self._build, renderer.framebuffer)

    def settle(self, frames: int = 3) -> None:
        """Run ``frames`` UI frames now (drawn into the renderer's frame, shown by the next one), so a docked
        layout has its sizes and the scene's rectangle is applied before the first frame takes input."""
        r = self.session.renderer
        for _ in range(frames):
            self._draw(r)

    def _build(self) -> None:
        if self.menu is not None:
            self.menu()
        if self.dock is not None:
            self._apply_view_rect(self.dock.begin())
        if self.show_profiler:
            x, y = self.profiler_at
            size = (430.0, max(200.0, self.layer.height - y - 8.0)) if self.dock is None else (430.0, 260.0)
            self.panel.draw(pos=(x, y), size=size)
        for fn in self.panels:
            fn()
        if self.show_help and self.help_lines:
            self._draw_help()

    def _apply_view_rect(self, rect: tuple[float, float, float, float] | None) -> None:
        """The central node (window pixels) -> the fractions the camera's image fills; applied when it changed."""
        w, h = float(self.layer.width), float(self.layer.height)
        frac: tuple[float, float, float, float] | None = None
        if rect is not None and rect[2] >= 1.0 and rect[3] >= 1.0:
            x0, y0 = min(max(rect[0] / w, 0.0), 1.0), min(max(rect[1] / h, 0.0), 1.0)
            frac = (x0, y0, min(rect[2] / w, 1.0 - x0), min(rect[3] / h, 1.0 - y0))
            if frac[2] <= 0.0 or frac[3] <= 0.0:
                frac = None
        if frac == self.view_fraction:
            return
        self.view_fraction = frac
        if self.on_view_rect is not None:
            self.on_view_rect(frac)
        elif hasattr(self.session.camera, "view_rect"):
            self.session.camera.view_rect = frac

    def _draw_help(self) -> None:
        from imgui_bundle import imgui

        if self.dock is not None:  # a dockable window like the others: it never covers the view
            if imgui.begin("Help (H)")[0]:
                for line in _paragraphs(self.help_lines):  # wrapped to the panel's width
                    imgui.text_wrapped(line)
            imgui.end()
            return
        w = 330.0
        imgui.set_next_window_pos(imgui.ImVec2(self.layer.width - w - 8.0, self.layer.height - 8.0),
                                  imgui.Cond_.always, imgui.ImVec2(0.0, 1.0))
        imgui.set_next_window_size(imgui.ImVec2(w, 0.0), imgui.Cond_.always)
        imgui.set_next_window_bg_alpha(0.75)
        flags = imgui.WindowFlags_.no_move | imgui.WindowFlags_.no_resize | imgui.WindowFlags_.no_collapse
        imgui.begin("controls (H)", None, flags)
        for line in self.help_lines:
            imgui.text(line)
        imgui.end()

    def attach_window(self, window: Any) -> None:
        """Mouse and keys of a pyglet window go to imgui first (the camera gets what imgui does not take)."""
        self.layer.attach_window(window)

    @property
    def wants_mouse(self) -> bool:
        return self.layer.wants_mouse

    def release(self) -> None:
        """Stop drawing, detach the profiler it made, release the imgui layer. Idempotent."""
        if self._released:
            return
        self._released = True
        ui = self.session.view.ui
        if self._draw in ui:
            ui.remove(self._draw)
        if self._own_profiler and self.profiler is not None:
            self.profiler.detach()
            self.profiler = None
        self.layer.release()


def _paragraphs(lines: Sequence[str]) -> list[str]:
    """Help lines broken for the fixed-width help window, joined again where a line continues the one before
    (it starts with spaces): a docked panel wraps them to its own width."""
    out: list[str] = []
    for line in lines:
        if line.startswith("  ") and out:
            out[-1] = f"{out[-1]} {line.strip()}"
        else:
            out.append(line)
    return out
