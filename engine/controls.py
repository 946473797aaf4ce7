"""Desktop controls written once, over the event model (engine/input/events.py): the orbit camera driven by
pointer drags and the wheel, and the clock driven by named actions. The demo's window loop
(:func:`engine.runloop.run_window`) and the editor's camera and shortcut systems (game/editor/systems.py) both
use them; only the bindings differ per host (the demo orbits on left-drag and pans on right/middle-drag; the
editor orbits on right-drag, or left-drag in its orbit tool, and pans on middle-drag).
"""
from __future__ import annotations

from collections.abc import Iterable, Mapping
from typing import Any

from engine.ecs.clock import MAX_TIME_SCALE
from engine.input.events import Buttons, InputEvent, PointerDown, PointerMove, PointerUp, Wheel

__all__ = ["CLOCK_ACTIONS", "camera_controls", "clock_action"]

#: the clock's actions (key bindings and panels name them): pause/play, one step, the time scale
CLOCK_ACTIONS = ("toggle_pause", "pause", "play", "step", "time_scale")


def camera_controls(events: Iterable[InputEvent], camera: Any, height: int, *, orbit: Buttons, pan: Buttons,
                    pointer: tuple[float, float] | None = None) -> tuple[float, float] | None:
    """Apply one frame's events to an orbit ``camera`` (anything with ``drag``, ``pan`` and ``zoom``; None:
    only the pointer is tracked): a drag with an ``orbit`` button held orbits, with a ``pan`` button pans
    (``height``: the frame's rows, for the pan's scale), the wheel zooms. ``pointer`` is the last pointer
    position seen (window pixels, row 0 at the top); returns the new one."""
    for e in events:
        if isinstance(e, Wheel):
            if camera is not None:
                camera.zoom(e.dy)
            continue
        if not isinstance(e, (PointerDown, PointerMove, PointerUp)):
            continue
        last, pointer = pointer, (e.x, e.y)
        if not isinstance(e, PointerMove) or last is None or camera is None:
            continue
        dx, dy = e.x - last[0], e.y - last[1]
        if e.buttons & orbit:
            camera.drag(dx, -dy)  # the camera's drag and pan take y up; events have row 0 at the top
        elif e.buttons & pan:
            camera.pan(dx, -dy, max(int(height), 1))
    return pointer


def clock_action(clock: Any, name: str, args: Mapping[str, Any] | None = None) -> None:
    """Run one of :data:`CLOCK_ACTIONS` on ``clock``: ``toggle_pause``, ``pause``, ``play``, ``step`` (one
    fixed step, while paused), ``time_scale`` (``value``, or ``factor`` times the current one; clamped to
    [1 / MAX_TIME_SCALE, MAX_TIME_SCALE]). ValueError for another name."""
    args = args or {}
    if name == "toggle_pause":
        clock.toggle_pause()
    elif name == "pause":
        clock.pause()
    elif name == "play":
        clock.resume()
    elif name == "step":
        if clock.paused:
            clock.single_step()
    elif name == "time_scale":
        value = float(args["value"]) if "value" in args else clock.time_scale * float(args.get("factor", 1.0))
        clock.time_scale = min(MAX_TIME_SCALE, max(1.0 / MAX_TIME_SCALE, value))
    else:
        raise ValueError(f"unknown clock action {name!r}; choose one of {', '.join(CLOCK_ACTIONS)}")
