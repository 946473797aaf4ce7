"""The window and headless loops: both call the same frame (:meth:`engine.Session.frame`).

``run_headless(session, frames)`` runs whole fixed steps offscreen (deterministic: the state of each step is
drawn). :func:`window_loop` is THE window loop, shared by the demo, the editor and a replay: the window's events
go into the session's event queue, and each redraw measures the real time since the last, runs the host's
frame with it (fixed steps as due, the pose drawn interpolated by the clock's alpha) into the window's
framebuffer, and every half second recompiles shaders whose files changed (a failed compile keeps the previous
program; the error is printed and shown in the window title).

``run_window(session, frames=None)`` is the demo's host over it (:data:`CONTROLS` is the help text): the
controls every window shares (engine/controls.py: right-drag orbit, middle or Shift+right-drag pan, wheel zoom;
Space, ``.``, ``[`` / ``]``, W, V; with an overlay (game/ui/overlay.py) Shift+P the profiler, Shift+F freezes
it, H the help), plus left-drag orbiting (the demo has no stroke tools) and Esc to quit. The caller may add
keys (``keys={name: (help, fn)}`` with event key names; the demo's deformer switch); the overlay's imgui
windows take the mouse first.
"""
from __future__ import annotations

import logging
import sys
import time
from collections.abc import Callable
from typing import Any

from engine.controls import VIEW_HELP

__all__ = ["run_headless", "run_window", "window_loop", "HOT_RELOAD_INTERVAL", "CONTROLS", "QUIT_HELP"]

log = logging.getLogger(__name__)

#: seconds between two checks of the shader files in the window loop
HOT_RELOAD_INTERVAL = 0.5

#: the demo window's controls, as the help overlay lists them: the shared ones (engine/controls.py), then the
#: caller's keys, then Esc
CONTROLS = ("left-drag orbits too (no tools here)", *VIEW_HELP)
QUIT_HELP = "Esc  quit"


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


def window_loop(session: Any, on_frame: Callable[[float], bool], *, title: str | None = None,
                frames: int | None = None, attach: Callable[[Any], None] | None = None,
                input_events: bool = True) -> list[float]:
    """THE window loop (the demo, the editor, a replay and, next, VR's mirror window): pyglet's window events
    go into the session's event queue (:class:`engine.input.events.PygletAdapter`; ``attach(window)`` then
    pushes the host's handlers above it, e.g. imgui's, which see the events first). Each redraw measures the
    real time since the last, follows the window's framebuffer size, runs ``on_frame(real_dt)`` (the host's
    frame: ``session.frame(dt)`` and what goes around it) and, every :data:`HOT_RELOAD_INTERVAL`, recompiles
    the shaders whose files changed (a failed compile keeps the previous program; the error shows in the
    title). Ends when the window closes, ``on_frame`` returns False, or after ``frames`` frames. Returns the
    frame times in ms (``on_frame`` alone). ``input_events=False`` keeps the window's events out of the queue
    (a replay's input is its recording)."""
    import pyglet

    from engine.input.events import PygletAdapter

    window = session.gl.window
    if window is None:
        raise ValueError("this session has no window (Session(window=True) with a display)")
    if title is not None:
        window.set_caption(title)
    caption = window.caption
    if input_events:
        PygletAdapter(session.events).attach(window)
    if attach is not None:
        attach(window)
    state = {"frames": 0, "last": time.perf_counter(), "reload": time.perf_counter()}
    frame_ms: list[float] = []

    @window.event
    def on_draw() -> None:
        now = time.perf_counter()
        dt, state["last"] = now - state["last"], now
        if now - state["reload"] > HOT_RELOAD_INTERVAL:
            state["reload"] = now
            if reload_shaders(session, on_error=lambda e: window.set_caption(f"{caption} - shader error")):
                window.set_caption(caption)
        draw_into_window(session)
        t0 = time.perf_counter()
        keep = on_frame(min(dt, 0.25))
        frame_ms.append((time.perf_counter() - t0) * 1e3)
        state["frames"] += 1
        if not keep or (frames is not None and state["frames"] >= frames):
            pyglet.app.exit()

    run_app(session)
    return frame_ms


#: the demo window's keys (lower-case event key names) -> what they do
DESKTOP_KEYS = {"space": "toggle_pause", "period": "step", "bracketleft": "time_scale_down",
                "bracketright": "time_scale_up", "w": "wireframe", "v": "view", "escape": "quit"}


def run_window(session: Any, frames: int | None = None, *, overlay: Any = None,
               keys: dict[str, tuple[str, Callable[[], None]]] | None = None) -> list[float]:
    """The demo's interactive loop in the session's window (until Esc / close, or ``frames`` frames), over
    :func:`window_loop`: an INPUT-phase system reads the session's events (camera controls of
    engine/controls.py: left-drag orbit, right/middle-drag pan, wheel zoom; the keys of :data:`CONTROLS`).

    ``overlay``: a game.ui.overlay.SessionOverlay (P / F / H keys, mouse to imgui first); ``keys``: extra key
    name (an event key name: ``"c"``, ``"1"``) -> (help line, action), checked before the built-in keys (an
    empty help line is not listed: one line may describe several keys)."""
    from engine.controls import CLOCK_ACTIONS, camera_controls, clock_action, shortcut, view_action
    from engine.ecs import Phase
    from engine.input.events import KeyDown, Modifiers
    from engine.render.camera import OrbitCamera

    if session.gl.window is None:
        raise ValueError("this session has no window (Session(window=True) with a display)")
    if not isinstance(session.camera, OrbitCamera):
        raise ValueError("the window loop needs an OrbitCamera on the session (session.camera)")
    renderer = session.renderer
    state: dict[str, Any] = {"quit": False, "pointer": None}
    extra = dict(keys or {})
    toggles = {"profiler": "profiler", "freeze_profiler": "freeze", "help": "help"}

    def desktop_controls(world: Any) -> None:
        events = session.events.frame
        state["pointer"] = camera_controls(events, session.camera, renderer.height, left_orbits=True,
                                           pointer=state["pointer"])
        for e in events:
            if not isinstance(e, KeyDown):
                continue
            bound = shortcut(e.key, e.modifiers)
            if e.key in extra and e.modifiers == Modifiers.NONE:
                extra[e.key][1]()
            elif e.key == "escape":
                state["quit"] = True
            elif bound is None:
                continue
            elif bound[0] in CLOCK_ACTIONS:
                clock_action(session.clock, *bound)
            elif bound[0] in toggles:
                if overlay is not None:
                    toggle_overlay(overlay, toggles[bound[0]])
            else:
                shown = view_action(renderer, bound[0])
                if shown is not None:
                    print(f"view: {shown}")

    if "desktop_controls" in session.schedule:  # a second window loop on the session takes over the controls
        session.schedule.remove_system("desktop_controls")
    session.add_system(Phase.INPUT, desktop_controls, name="desktop_controls", after="input_begin_system")

    def on_frame(dt: float) -> bool:
        session.frame(dt)
        return not state["quit"]

    if overlay is not None:
        overlay.help_lines = [*CONTROLS, *(h for h, _fn in extra.values() if h), QUIT_HELP]
    return window_loop(session, on_frame, frames=frames,
                       attach=overlay.attach_window if overlay is not None else None)  # imgui on top: first


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
