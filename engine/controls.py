"""Desktop controls written once, over the event model (engine/input/events.py): one set for every window (the
demo, the editor and, next, VR's mirror window), as the README lists them.

* Camera (:func:`camera_controls`): right-drag orbits, middle-drag (or Shift+right-drag) pans, the wheel zooms;
  left-drag orbits too where the left button draws nothing (the demo, the editor's orbit tool).
* Keys (:data:`VIEW_KEYS`): Space play/pause, ``.`` one step while paused, ``[`` / ``]`` halve / double the
  time scale, W wireframe, V the G-buffer debug views, Shift+P the profiler, Shift+F freezes it, H the help.
  Each host adds its own keys (the editor's tools, the demo's deformer switch) and its Esc.
* :data:`VIEW_HELP`: the help lines of those controls, shown in the same help window by every host.
"""
from __future__ import annotations

from collections.abc import Iterable, Mapping
from typing import Any

from engine.ecs.clock import MAX_TIME_SCALE
from engine.input.events import Buttons, InputEvent, Modifiers, PointerDown, PointerMove, PointerUp, Wheel

__all__ = ["CLOCK_ACTIONS", "VIEW_ACTIONS", "VIEW_KEYS", "VIEW_HELP", "SHORTCUT_MODIFIERS", "camera_controls",
           "clock_action", "view_action", "shortcut"]

#: the clock's actions (key bindings and panels name them): pause/play, one step, the time scale
CLOCK_ACTIONS = ("toggle_pause", "pause", "play", "step", "time_scale")
#: the view's actions: wireframe, the G-buffer debug view, and the overlay toggles each host carries out
VIEW_ACTIONS = ("wireframe", "cycle_view", "profiler", "freeze_profiler", "help")
#: the modifiers a shortcut is told apart by (Caps Lock, Num Lock and the like are ignored)
SHORTCUT_MODIFIERS = Modifiers.CTRL | Modifiers.SHIFT | Modifiers.ALT | Modifiers.SUPER
#: (key name, modifiers) -> (action, arguments): the keys every window shares
VIEW_KEYS: dict[tuple[str, Modifiers], tuple[str, dict[str, Any]]] = {
    ("space", Modifiers.NONE): ("toggle_pause", {}),
    ("period", Modifiers.NONE): ("step", {}),
    ("bracketleft", Modifiers.NONE): ("time_scale", {"factor": 0.5}),
    ("bracketright", Modifiers.NONE): ("time_scale", {"factor": 2.0}),
    ("w", Modifiers.NONE): ("wireframe", {}),
    ("v", Modifiers.NONE): ("cycle_view", {}),
    ("p", Modifiers.SHIFT): ("profiler", {}),
    ("f", Modifiers.SHIFT): ("freeze_profiler", {}),
    ("h", Modifiers.NONE): ("help", {}),
}
#: the help lines of :data:`VIEW_KEYS` and the camera (at most 40 characters: the help window's width)
VIEW_HELP = (
    "right-drag orbit, middle pan, wheel zoom",
    "Space play/pause, . step, [ ] speed",
    "W wireframe, V G-buffer view, H help",
    "Shift+P profiler, Shift+F freeze it",
)


def shortcut(key: str, modifiers: Modifiers) -> tuple[str, dict[str, Any]] | None:
    """The shared action bound to a key press (None: none)."""
    return VIEW_KEYS.get((key, modifiers & SHORTCUT_MODIFIERS))


def camera_controls(events: Iterable[InputEvent], camera: Any, height: int, *, left_orbits: bool = False,
                    pointer: tuple[float, float] | None = None) -> tuple[float, float] | None:
    """Apply one frame's events to an orbit ``camera`` (anything with ``drag``, ``pan`` and ``zoom``; None:
    only the pointer is tracked): right-drag (and left-drag when ``left_orbits``) orbits, middle-drag or
    Shift+right-drag pans (``height``: the frame's rows, for the pan's scale), the wheel zooms. ``pointer`` is
    the last pointer position seen (window pixels, row 0 at the top); returns the new one."""
    orbit = Buttons.RIGHT | (Buttons.LEFT if left_orbits else Buttons.NONE)
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
        pan = bool(e.buttons & Buttons.MIDDLE) or bool(e.buttons & Buttons.RIGHT and e.modifiers & Modifiers.SHIFT)
        # the camera's drag and pan take y up; events have row 0 at the top
        if pan:
            camera.pan(dx, -dy, max(int(height), 1))
        elif e.buttons & orbit:
            camera.drag(dx, -dy)
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


def view_action(renderer: Any, name: str) -> str | None:
    """Run ``wireframe`` or ``cycle_view`` on ``renderer`` (None: no renderer); returns the view now shown for
    ``cycle_view``. The overlay toggles (``profiler``, ``freeze_profiler``, ``help``) belong to the host."""
    if renderer is None:
        return None
    if name == "wireframe":
        renderer.wireframe = not renderer.wireframe
        return None
    if name == "cycle_view":  # colour, albedo, normal, position, depth, triangle, barycentric, mesh
        return str(renderer.cycle_view())
    raise ValueError(f"unknown view action {name!r}; choose wireframe or cycle_view")
