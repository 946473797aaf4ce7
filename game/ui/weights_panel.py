"""The Weights tool's controls (game/editor/weights_edit.py), drawn inside the Tools panel (game/editor/window.py)
while the tool is chosen: what a left-drag does (paint, drag a vertex, show a vertex's influence region), the
joint whose weights are painted and shown as a heat map, the brush's radius (metres on the bind surface), value
and mode, and the undo hint. Like every panel it only pushes actions (``weights`` {...}), so a recording replays
them.
"""
from __future__ import annotations

from collections.abc import Callable
from typing import Any

__all__ = ["draw_weights_controls", "WEIGHTS_HINTS"]

#: What a left-drag does, per action (shown at the top of the controls).
WEIGHTS_HINTS = {
    "paint": "left-drag on the skin paints the joint",
    "drag": "left-drag a vertex where it should go",
    "influence": "click a vertex: what moves with it",
    "spline": "left-drag on the skin: an isoline at the value",
}


def draw_weights_controls(editor: Any, act: Callable[..., None]) -> None:
    """Draw the controls into the current imgui window for ``editor`` (game.editor.Editor); ``act(name,
    **args)`` pushes an Action. Nothing is drawn outside the Weights tool."""
    from imgui_bundle import imgui

    from game.editor.weights_edit import TOOL_NAME, WEIGHT_ACTIONS, WEIGHT_MODES

    if editor.state.settings.tool != TOOL_NAME:
        return
    w = editor.weights
    imgui.separator_text(f"weights: {WEIGHTS_HINTS[w.action]}")
    tool = w.tool
    if tool is None:
        imgui.text_wrapped("select a skinned character")
        return
    changed, i = imgui.combo("action", WEIGHT_ACTIONS.index(w.action), list(WEIGHT_ACTIONS))
    if changed:
        act("weights", action=WEIGHT_ACTIONS[i])
    names = [str(n) for n in tool.prim.joint_names]
    changed, j = imgui.combo("joint", int(tool.joint), names)
    if changed and j != tool.joint:
        act("weights", joint=names[j])
    changed, r = imgui.slider_float("radius m", float(w.radius), 0.005, 0.5, "%.3f")
    if changed:
        act("weights", radius=float(r))
    changed, v = imgui.slider_float("value", float(w.value), 0.0, 1.0, "%.2f")
    if changed:
        act("weights", value=float(v))
    changed, m = imgui.combo("mode", WEIGHT_MODES.index(w.mode), list(WEIGHT_MODES))
    if changed:
        act("weights", mode=WEIGHT_MODES[m])
    for i, v in enumerate(w.anchors.tolist()):  # the isolines' anchors (two per line: its ends)
        changed, nv = imgui.slider_float(f"isoline {i // 2 + 1} {'end' if i % 2 else 'start'}", float(v), 0.0, 1.0,
                                         "%.2f")
        if changed:
            act("weights", anchor=i, iso=float(nv))
    if w.region is not None:
        imgui.text(f"influence region: {len(w.region)} vertices")
    imgui.text_wrapped("heat: green >= 2/3, blue >= 1/3, red > 0.02; Ctrl+Z undoes a stroke or a drag")
