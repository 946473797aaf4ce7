"""The desktop mirror window of a VR session: the left eye with the UI (the profiler overlay, its help), through
THE window loop (engine/runloop.py ``window_loop``), the same loop the demo, the editor and a replay run.

Each redraw runs one VR frame (the device paces it: a headset's ``waitGetPoses``, the simulated headset's
script), then copies the left eye's texture into the renderer's frame, draws the session's UI callbacks over
it (``session.view.ui``; the headset's eyes never get them) and copies that to the window. The window is made
at the eye size; the stereo system keeps the renderer at the eye size whatever the window does. Esc or closing
the window ends the run like the script's end does.
"""
from __future__ import annotations

from typing import Any

__all__ = ["run_mirror"]


def run_mirror(vr: Any, actions: Any = None, *, frames: int | None = None, profiler: bool = False,
               screenshot: str | None = None) -> int:
    """Run ``vr`` (a game.vr.session.VRSession on a windowed Session) in its mirror window until the device
    has no more frames, the window closes or Esc; ``actions(i)``: the actions due at frame i (the simulated
    headset's); ``profiler``: show the profiler overlay from the start; ``screenshot``: write the mirror's last
    frame (left eye + UI) to this PNG. Returns the frames run."""
    from engine.input.events import KeyDown
    from engine.runloop import window_loop
    from game.ui.overlay import SessionOverlay

    s = vr.s
    ui = SessionOverlay(s, show_profiler=profiler)
    state = {"i": 0, "quit": False}

    def on_frame(dt: float) -> bool:
        s.view.target = None  # the eyes render offscreen; the mirror is copied to the window below
        more = vr.frame(actions(state["i"]) if actions is not None else None)
        if not more:  # the renderer's frame still holds the last mirror frame
            if screenshot is not None:
                s.renderer.save_png(screenshot)
            return False
        state["i"] += 1
        if any(isinstance(e, KeyDown) and e.key == "escape" for e in s.events.frame):
            state["quit"] = True
        r = s.renderer
        ctx = s.ctx
        ctx.copy_framebuffer(r.framebuffer, vr.targets.fbos[0])  # the left eye
        r.framebuffer.use()
        for fn in list(s.view.ui):
            fn(r)
        screen = ctx.screen
        ctx.copy_framebuffer(screen, r.framebuffer)
        if state["quit"] and screenshot is not None:
            r.save_png(screenshot)
        return not state["quit"]

    try:
        window_loop(s, on_frame, title=f"skinengine VR mirror ({vr.device.name})", frames=frames,
                    attach=ui.attach_window)
    finally:
        ui.release()
    return int(state["i"])
