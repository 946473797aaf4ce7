"""The window and headless loops: both call the same frame (:meth:`engine.Session.frame`).

``run_headless(session, frames)`` runs whole fixed steps offscreen (deterministic: the state of each step is
drawn). ``run_window(session, frames=None)`` drives a pyglet window: each redraw measures the real time since
the last, runs one frame with it (fixed steps as due, the pose drawn interpolated by the clock's alpha) into
the window's framebuffer, and every half second recompiles shaders whose files changed (a failed compile keeps
the previous program; the error is printed and shown in the window title).

Desktop controls (until the editor's input layer takes them; :data:`CONTROLS` is the help text): left-drag
orbit, right/middle-drag pan, wheel zoom; Space play/pause, ``.`` one fixed step while paused, ``[`` / ``]``
halve / double the time scale, W wireframe, V cycles the G-buffer debug views, Esc quits; with an overlay
(game/ui/overlay.py): P shows the profiler, F freezes it, H shows the controls help. The caller may add keys
(``keys={symbol: (help, fn)}``; the demo's deformer switch); the overlay's imgui windows take the mouse first.
"""
from __future__ import annotations

import logging
import sys
import time
from collections.abc import Callable
from typing import Any

from engine.ecs.clock import MAX_TIME_SCALE

__all__ = ["run_headless", "run_window", "HOT_RELOAD_INTERVAL", "CONTROLS", "OVERLAY_CONTROLS"]

log = logging.getLogger(__name__)

#: seconds between two checks of the shader files in the window loop
HOT_RELOAD_INTERVAL = 0.5

#: the window's controls, as the help overlay lists them
CONTROLS = (
    "left drag  orbit      right drag  pan      wheel  zoom",
    "Space  play/pause     .  one step (paused)",
    "[ ]  time scale       W  wireframe      V  G-buffer view",
    "Esc  quit",
)
#: the overlay's keys (run_window with an overlay)
OVERLAY_CONTROLS = ("P  profiler           F  freeze profiler", "H  this help")


def run_headless(session: Any, frames: int) -> list[float]:
    """``frames`` frames of one fixed step each, offscreen; wall time per frame in ms (GPU work included:
    each frame waits for the GPU to finish)."""
    if isinstance(frames, bool) or not isinstance(frames, int) or frames < 1:
        raise ValueError(f"frames must be an integer >= 1, got {frames!r}")
    out = []
    for _ in range(frames):
        t0 = time.perf_counter()
        session.step()
        if session.ctx is not None:
            session.ctx.finish()
        out.append((time.perf_counter() - t0) * 1e3)
    return out


def reload_shaders(session: Any, *, on_error=None) -> int:
    """Recompile the changed shaders; report failures (the old programs stay). Returns how many recompiled."""
    ok = 0
    for r in session.reload_shaders():
        if r.ok:
            ok += 1
            log.info("shader reloaded: %s", r.key[1])
        else:
            print(f"shader error (previous program kept):\n{r.error}", file=sys.stderr)
            if on_error is not None:
                on_error(r.error)
    return ok


def run_window(session: Any, frames: int | None = None, *, overlay: Any = None,
               keys: dict[int, tuple[str, Callable[[], None]]] | None = None) -> list[float]:
    """The interactive loop in the session's window (until Esc / close, or ``frames`` frames).

    ``overlay``: a game.ui.overlay.SessionOverlay (P / F / H keys, mouse to imgui first); ``keys``: extra key
    symbol -> (help line, action), checked before the built-in keys (an empty help line is not listed: one
    line may describe several keys)."""
    import pyglet
    from pyglet.window import key, mouse

    from engine.render.camera import OrbitCamera

    window = session.gl.window
    if window is None:
        raise ValueError("this session has no window (Session(window=True) with a display)")
    if not isinstance(session.camera, OrbitCamera):
        raise ValueError("the window loop needs an OrbitCamera on the session (session.camera)")
    title = window.caption
    state = {"frames": 0, "last": time.perf_counter(), "reload": time.perf_counter()}
    frame_ms: list[float] = []
    renderer = session.renderer

    @window.event
    def on_draw():
        now = time.perf_counter()
        dt, state["last"] = now - state["last"], now
        if now - state["reload"] > HOT_RELOAD_INTERVAL:
            state["reload"] = now
            if reload_shaders(session, on_error=lambda e: window.set_caption(f"{title} - shader error")):
                window.set_caption(title)
        t0 = time.perf_counter()
        draw_into_window(session)
        session.frame(min(dt, 0.25))
        frame_ms.append((time.perf_counter() - t0) * 1e3)
        state["frames"] += 1
        if frames is not None and state["frames"] >= frames:
            pyglet.app.exit()

    @window.event
    def on_mouse_drag(x, y, dx, dy, buttons, modifiers):
        if buttons & mouse.LEFT:
            session.camera.drag(dx, dy)
        elif buttons & (mouse.RIGHT | mouse.MIDDLE):
            session.camera.pan(dx, dy, renderer.height)

    @window.event
    def on_mouse_scroll(x, y, scroll_x, scroll_y):
        session.camera.zoom(scroll_y)

    @window.event
    def on_key_press(symbol, modifiers):
        clock = session.clock
        if keys and symbol in keys:
            keys[symbol][1]()
        elif overlay is not None and symbol in (key.P, key.F, key.H):
            toggle_overlay(overlay, {key.P: "profiler", key.F: "freeze", key.H: "help"}[symbol])
        elif symbol == key.SPACE:
            clock.toggle_pause()
        elif symbol == key.PERIOD and clock.paused:
            clock.single_step()
        elif symbol == key.BRACKETLEFT:
            clock.time_scale = max(1.0 / MAX_TIME_SCALE, clock.time_scale / 2)
        elif symbol == key.BRACKETRIGHT:
            clock.time_scale = min(MAX_TIME_SCALE, clock.time_scale * 2)
        elif symbol == key.W:
            renderer.wireframe = not renderer.wireframe
        elif symbol == key.V:  # debug views: colour, albedo, normal, position, depth, triangle, barycentric, mesh
            print(f"view: {renderer.cycle_view()}")
        elif symbol == key.ESCAPE:
            pyglet.app.exit()

    if overlay is not None:  # after the loop's own handlers: imgui's sit on top and see events first
        overlay.help_lines = list(CONTROLS) + list(OVERLAY_CONTROLS) + [h for h, _fn in (keys or {}).values() if h]
        overlay.attach_window(window)
    run_app(session)
    return frame_ms


def draw_into_window(session: Any) -> None:
    """Before a redraw: the renderer follows the window's framebuffer size and the view draws into the window."""
    window = session.gl.window
    w, h = window.get_framebuffer_size()
    r = session.renderer
    if (w, h) != (r.width, r.height) and w > 0 and h > 0:
        r.resize(w, h)
    fb = session.ctx.screen
    fb.viewport = (0, 0, w, h)
    session.view.target = fb


def run_app(session: Any) -> None:
    """pyglet's event loop (redraws up to 120 Hz) until a handler exits it; the view's target is reset after."""
    import pyglet

    pyglet.clock.schedule_interval(lambda _dt: None, 1 / 120)
    try:
        pyglet.app.run()
    finally:
        session.view.target = None


def toggle_overlay(overlay: Any, what: str) -> bool:
    """The overlay keys: "profiler" (P), "freeze" (F), "help" (H); returns the new state."""
    if what == "profiler":
        overlay.show_profiler = not overlay.show_profiler
        return overlay.show_profiler
    if what == "freeze":
        return overlay.panel.toggle_freeze()
    if what == "help":
        overlay.show_help = not overlay.show_help
        return overlay.show_help
    raise ValueError(f"unknown overlay toggle {what!r}; choose profiler, freeze or help")
