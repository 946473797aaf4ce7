"""The editor window: a pyglet window whose input goes through the one event model (engine/input/events.py)
into the editor's systems (engine/editor), and the real-time replay of a recording.

``python main.py --record FILE`` opens it on the humanoid (or ``--asset``), recording the session to FILE;
``python main.py replay FILE`` (with a display) plays a recording back in it. Controls (engine/editor/systems.py
``KEY_BINDINGS``): P pose tool (left-drag draws a baseline, then an offset stroke), O orbit tool, right-drag
orbits, middle-drag pans, wheel zooms, Ctrl+Z / Ctrl+Shift+Z undo / redo, Space pause, ``.`` one step,
``[`` / ``]`` time scale, Esc drops the strokes (and quits when there are none).
"""
from __future__ import annotations

import argparse
import os
import time
from collections.abc import Callable
from typing import Any

__all__ = ["run_editor", "run_editor_window", "replay_window", "has_display"]


def has_display() -> bool:
    """Whether a window can open (an X11 or Wayland display)."""
    return bool(os.environ.get("DISPLAY") or os.environ.get("WAYLAND_DISPLAY"))


def _loop(ed: Any, on_frame: Callable[[float], bool], *, title: str) -> list[float]:
    """Redraw until close or ``on_frame(real_dt)`` returns False; frame times in ms."""
    import pyglet

    s = ed.session
    window = s.gl.window
    if window is None:
        raise ValueError("this session has no window (Session(window=True) with a display)")
    window.set_caption(title)
    frame_ms: list[float] = []
    state = {"last": time.perf_counter()}

    @window.event
    def on_draw() -> None:
        now = time.perf_counter()
        dt, state["last"] = now - state["last"], now
        w, h = window.get_framebuffer_size()
        r = s.renderer
        if (w, h) != (r.width, r.height) and w > 0 and h > 0:
            r.resize(w, h)
        fb = s.ctx.screen
        fb.viewport = (0, 0, w, h)
        s.view.target = fb
        t0 = time.perf_counter()
        keep = on_frame(min(dt, 0.25))
        frame_ms.append((time.perf_counter() - t0) * 1e3)
        if not keep:
            pyglet.app.exit()

    pyglet.clock.schedule_interval(lambda _dt: None, 1 / 120)
    try:
        pyglet.app.run()
    finally:
        s.view.target = None
    return frame_ms


def run_editor_window(ed: Any, *, frames: int | None = None) -> list[float]:
    """The interactive editor loop: pyglet events -> the editor's queue; one frame per redraw."""
    from pyglet.window import key

    from engine.input.events import PygletAdapter

    s = ed.session
    window = s.gl.window
    PygletAdapter(ed.queue).attach(window)
    count = {"n": 0, "quit": False}

    def on_key_press(symbol: int, modifiers: int) -> None:
        if symbol == key.ESCAPE and not (ed.state.strokes or ed.state.drawing):
            count["quit"] = True

    window.push_handlers(on_key_press=on_key_press)

    def on_frame(dt: float) -> bool:
        s.frame(dt)
        count["n"] += 1
        return not count["quit"] and (frames is None or count["n"] < frames)

    return _loop(ed, on_frame, title="skinengine editor")


def run_editor(args: argparse.Namespace) -> int:
    """``main.py --record FILE``: the editor window on ``--asset`` (default the humanoid), recorded."""
    from engine import Session
    from engine.editor import Editor

    if not has_display():
        raise ValueError("the editor needs a display (DISPLAY or WAYLAND_DISPLAY); "
                         "run it under a desktop or xvfb-run")
    deformer = None if args.deformer == "auto" else args.deformer
    with Session(window=True, width=args.width, height=args.height, device=args.device,
                 title="skinengine editor") as s:
        ed = Editor(s)
        ed.spawn(args.asset or "humanoid", clip="idle" if not args.asset else 0, deformer=deformer)
        ed.frame_camera()
        if args.record:
            ed.record(args.record)
        try:
            run_editor_window(ed, frames=args.frames)
        finally:
            path = ed.stop_recording()
        if path is not None:
            print(f"recorded {path}")
        if args.screenshot:
            s.render()
            s.save_png(args.screenshot)
    return 0


def replay_window(rec: Any, *, device: str = "gpu", outputs: Callable[[Any], None] | None = None) -> int:
    """Play a recording back in a window, one recorded frame per redraw (each with its recorded dt, so the
    result is the headless replay's); ``outputs(editor)`` runs at the end. Returns the frame count."""
    from engine.editor import open_recording

    ed = open_recording(rec, headless=False, window=True, device=device)
    try:
        frames = iter(rec.frames)
        done = {"n": 0}

        def on_frame(_dt: float) -> bool:
            f = next(frames, None)
            if f is None:
                return False
            ed.queue.extend(f.events)
            ed.session.frame(f.dt, interpolate=False)
            done["n"] += 1
            return True

        _loop(ed, on_frame, title=f"skinengine replay: {rec.path.name if rec.path else 'recording'}")
        if outputs is not None:
            outputs(ed)
        return int(done["n"])
    finally:
        ed.session.release()
