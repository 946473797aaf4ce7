"""The editor's INPUT-phase systems, in run order (game/editor/editor.py registers them):

1. ``input_begin_system`` (the engine's first system, engine/frame.py): this frame's events become
   ``EventQueue.frame``.
2. :func:`shortcut_system`: keys -> editor commands (the keys every window shares, engine/controls.py:
   Space pause, ``.`` one step, ``[`` / ``]`` time scale, W wireframe, V G-buffer view; Shift+P, Shift+F
   and H are carried out by the window; then Ctrl+Z undo, Ctrl+Shift+Z / Ctrl+Y redo, O orbit tool, P pose
   tool, B bulge tool, S silhouette tool, Shift+W weights tool, ``=`` / ``-`` the surface height, R / Shift+R
   the surface rings, Esc drops the strokes, K the skeleton, Ctrl+K keys the pose at the playhead) and
   :class:`Action` events from panels and scripts (``tool``, ``set``, ``end_edit``, ``surface_nudge``,
   ``undo``, ``redo``, ``clear_strokes``, ``pause``, ``play``, ``step``, ``time_scale``, ``select``,
   ``skeleton`` {"on"?}, ``view_rect`` {"rect": [x, y, w, h] fractions or null: the docked central view})
   -> the same commands.
3. :func:`camera_system`: the shared camera controls (engine/controls.py: right-drag orbits, left-drag too in
   the orbit tool, middle or Shift+right-drag pans, the wheel zooms); a Resize resizes the frame.
4. :func:`stroke_input_system`: left-button down/move/up in a stroke tool -> the samples of the stroke
   being drawn -> on release a fitted :class:`engine.input.strokes.Stroke` (RDP epsilon scaled to the frame
   height) in ``EditorState.finished``; an unusable stroke is refused with a message, never an exception.

Every system reads events only from the queue, never from a window library, so a replay drives them exactly
as the window did. The systems reach the session's objects through world resources (EditorState,
CommandStack, EventQueue, View, Clock).
"""
from __future__ import annotations

from typing import Any

import numpy as np

from engine.controls import (
    CLOCK_ACTIONS,
    SHORTCUT_MODIFIERS,
    VIEW_KEYS,
    camera_controls,
    clock_action,
    view_action,
)
from engine.ecs import Clock, World
from engine.frame import View
from engine.input.events import (
    Action,
    Buttons,
    EventQueue,
    KeyDown,
    Modifiers,
    PointerDown,
    PointerMove,
    PointerUp,
    Resize,
)
from engine.input.strokes import Stroke, StrokeError, window_epsilon
from game.editor.state import STROKE_TOOLS, EditorState, StrokeInProgress
from game.editor.undo import CommandStack

__all__ = ["KEY_BINDINGS", "CHARACTER_ACTIONS", "shortcut_system", "apply_action", "camera_system",
           "stroke_input_system"]

#: (key, modifiers) -> (action name, args): the keys every window shares (engine/controls.py VIEW_KEYS: time,
#: view, profiler, help) and the editor's own; the help overlay lists this table.
KEY_BINDINGS: dict[tuple[str, Modifiers], tuple[str, dict[str, Any]]] = {
    **VIEW_KEYS,
    ("z", Modifiers.CTRL): ("undo", {}),
    ("z", Modifiers.CTRL | Modifiers.SHIFT): ("redo", {}),
    ("y", Modifiers.CTRL): ("redo", {}),
    ("o", Modifiers.NONE): ("tool", {"name": "orbit"}),
    ("p", Modifiers.NONE): ("tool", {"name": "pose"}),
    ("b", Modifiers.NONE): ("tool", {"name": "bulge"}),
    ("s", Modifiers.NONE): ("tool", {"name": "silhouette"}),
    ("w", Modifiers.SHIFT): ("tool", {"name": "weights"}),
    ("equal", Modifiers.NONE): ("surface_nudge", {"surface_height": 0.005}),
    ("minus", Modifiers.NONE): ("surface_nudge", {"surface_height": -0.005}),
    ("r", Modifiers.NONE): ("surface_nudge", {"surface_rings": 1}),
    ("r", Modifiers.SHIFT): ("surface_nudge", {"surface_rings": -1}),
    ("escape", Modifiers.NONE): ("clear_strokes", {}),
    ("k", Modifiers.NONE): ("skeleton", {}),
    ("k", Modifiers.CTRL): ("key_pose", {}),
}
#: Actions on the selected character, run by the Editor (it holds the Character handles), not here.
CHARACTER_ACTIONS = ("deformer", "config", "clip", "scrub", "speed", "select_joint", "rotate_joint", "key_pose")
#: Actions a TOOLS-phase tool reads itself (the Weights tool's settings, game/editor/weights_edit.py)
TOOL_ACTIONS = ("weights",)
#: the view's overlay toggles: the editor window carries them out (game/editor/window.py), not the systems
_WINDOW_ACTIONS = ("profiler", "freeze_profiler", "help")


def apply_action(world: World, name: str, args: dict[str, Any]) -> None:
    """Run one editor command (a key binding or an :class:`Action`); a refused value becomes a message."""
    state = world.resource(EditorState)
    undo = world.resource(CommandStack)
    clock = world.resource(Clock)
    try:
        if name == "undo":
            if undo.undo() is None:
                state.say("nothing to undo")
        elif name == "redo":
            if undo.redo() is None:
                state.say("nothing to redo")
        elif name == "tool":
            state.settings.update(tool=args.get("name"))
            state.drawing = None
            state.strokes.clear()
        elif name == "set":
            state.settings.update(**args)
        elif name == "end_edit":  # a slider released: the next change is a new undo step
            undo.close()
        elif name == "surface_nudge":  # a key steps a surface setting (clamped to its range); one undo step each
            undo.close()
            state.settings.nudge(**args)
        elif name == "clear_strokes":
            state.drawing = None
            state.strokes.clear()
            state.editable.clear()
            state.knot_drag = None
        elif name in CLOCK_ACTIONS:
            clock_action(clock, name, args)
        elif name in ("wireframe", "cycle_view"):
            view = world.try_resource(View)
            shown = view_action(view.renderer if view is not None else None, name)
            if shown is not None:
                state.say(f"view: {shown}")
        elif name in _WINDOW_ACTIONS:
            pass
        elif name == "view_rect":  # the docked panels' central view: the camera's image fills it
            from engine.render.camera import check_view_rect

            view = world.resource(View)
            rect = check_view_rect(args.get("rect"))
            if view.camera is not None and hasattr(view.camera, "view_rect"):
                view.camera.view_rect = rect
        elif name == "skeleton":
            state.show_skeleton = bool(args["on"]) if "on" in args else not state.show_skeleton
        elif name == "select":
            entity = args.get("entity")
            if entity is not None and not world.is_alive(entity):
                raise ValueError(f"no entity {entity!r} to select")
            state.selected = entity
        elif name not in CHARACTER_ACTIONS and name not in TOOL_ACTIONS:
            state.say(f"unknown action {name!r}")
    except (ValueError, TypeError, KeyError) as exc:
        state.say(f"{name}: {exc}")


def shortcut_system(world: World) -> None:
    """Keys and actions of this frame -> editor commands, in event order."""
    queue = world.try_resource(EventQueue)
    if queue is None:
        return
    for e in queue.frame:
        if isinstance(e, KeyDown):
            bound = KEY_BINDINGS.get((e.key, e.modifiers & SHORTCUT_MODIFIERS))
            if bound is not None:
                apply_action(world, *bound)
        elif isinstance(e, Action):
            apply_action(world, e.name, e.args)


def _orbit_camera(world: World) -> Any:
    view = world.try_resource(View)
    cam = None if view is None else view.camera
    return cam if cam is not None and hasattr(cam, "drag") else None


def camera_system(world: World) -> None:
    """Orbit, pan and zoom the view's orbit camera from pointer drags and the wheel; resize on Resize."""
    queue = world.try_resource(EventQueue)
    state = world.try_resource(EditorState)
    if queue is None or state is None:
        return
    view = world.resource(View)
    for e in queue.frame:
        if isinstance(e, Resize) and view.renderer is not None \
                and (e.width, e.height) != (view.renderer.width, view.renderer.height):
            view.renderer.resize(e.width, e.height)
    height = view.renderer.height if view.renderer is not None else max(queue.state.height, 1)
    state.pointer = camera_controls(queue.frame, _orbit_camera(world), height,
                                    left_orbits=state.settings.tool == "orbit", pointer=state.pointer)


def _frame_height(world: World) -> int:
    view = world.try_resource(View)
    if view is not None and view.renderer is not None:
        return int(view.renderer.height)
    queue = world.resource(EventQueue)
    return queue.state.height or 1080


def _finish(state: EditorState, drawing: StrokeInProgress, height: int) -> None:
    if len(set(drawing.points)) == 1:  # a click, not a stroke (the window selects with it)
        return
    try:
        stroke = Stroke.fit(drawing.points, drawing.times,
                            epsilon=window_epsilon(height, state.settings.epsilon_px), window_height=height)
    except StrokeError as exc:
        state.say(f"stroke refused: {exc}")
        return
    state.finished.append(stroke)


#: how near (window pixels) a press must be to a knot of an editable stroke to drag it
KNOT_PICK_PX = 8.0


def _knot_under(state: EditorState, x: float, y: float) -> tuple[int, int] | None:
    best: tuple[float, int, int] | None = None
    for i, stroke in enumerate(state.editable):
        d = np.hypot(stroke.knots[:, 0] - x, stroke.knots[:, 1] - y)
        k = int(np.argmin(d))
        if d[k] <= KNOT_PICK_PX and (best is None or d[k] < best[0]):
            best = (float(d[k]), i, k)
    return None if best is None else (best[1], best[2])


def _move_knot(state: EditorState, x: float, y: float, height: int) -> None:
    """Refit the dragged stroke through its knots with one moved (no further reduction)."""
    assert state.knot_drag is not None
    i, k = state.knot_drag
    stroke = state.editable[i]
    knots = stroke.knots.copy()
    if tuple(knots[k]) == (x, y):
        return
    knots[k] = (x, y)
    try:
        state.editable[i] = Stroke.fit(knots, stroke.times[stroke.kept], epsilon=0.0, window_height=height)
    except StrokeError:  # the move would make the stroke degenerate: keep the last good one
        return
    state.knots_moved = True


def stroke_input_system(world: World) -> None:
    """Left-button pointer down/move/up in a stroke tool -> fitted window-space strokes; a press on a knot of
    an editable stroke drags that knot instead (``EditorState.knots_moved`` tells the tool)."""
    queue = world.try_resource(EventQueue)
    state = world.try_resource(EditorState)
    if queue is None or state is None:
        return
    state.finished.clear()
    state.knots_moved = False
    if state.settings.tool not in STROKE_TOOLS:
        state.drawing = None
        state.knot_drag = None
        return
    height = _frame_height(world)
    undo = world.try_resource(CommandStack)
    for e in queue.frame:
        if isinstance(e, PointerUp) and undo is not None and state.knot_drag is None:
            undo.close()  # a drag ends: the next edit is a new undo step (a knot drag: the tool closes it)
        if isinstance(e, PointerDown) and e.button & Buttons.LEFT:
            posing = state.settings.tool == "pose" and not state.strokes  # knots are the pose's strokes
            state.knot_drag = _knot_under(state, e.x, e.y) if posing else None
            if state.knot_drag is None:
                state.drawing = StrokeInProgress([(e.x, e.y)], [e.t], [e.pressure])
        elif state.knot_drag is not None:
            if isinstance(e, PointerMove) and e.buttons & Buttons.LEFT:
                _move_knot(state, e.x, e.y, height)
            elif isinstance(e, PointerUp) and e.button & Buttons.LEFT:
                _move_knot(state, e.x, e.y, height)
                state.knot_drag = None
        elif state.drawing is None:
            continue
        elif isinstance(e, PointerMove) and e.buttons & Buttons.LEFT:
            state.drawing.points.append((e.x, e.y))
            state.drawing.times.append(e.t)
            state.drawing.pressures.append(e.pressure)
        elif isinstance(e, PointerUp) and e.button & Buttons.LEFT:
            d = state.drawing
            if (e.x, e.y) != d.points[-1]:
                d.points.append((e.x, e.y))
                d.times.append(e.t)
                d.pressures.append(e.pressure)
            state.drawing = None
            _finish(state, d, height)

