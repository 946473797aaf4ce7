"""The editor's surface controls: the settings of the bulge and silhouette tools (game/editor/surface.py), drawn
inside the Tools panel (game/editor/window.py) while a surface tool is chosen: profile (bulge or sine), height in
millimetres, easing (eq. 24 / Fig. 22; "quadOut" is the research's parabola), waves and speed of a sine, rings of
the passive region, stiffness and, for silhouette strokes, the solver (springs or Laplacian editing). Like every
panel it only pushes actions (``set`` while a slider moves, ``end_edit`` when it is released, so one drag is one
undo step), and the surface tool applies a changed setting to the active edit live.
"""
from __future__ import annotations

from collections.abc import Callable
from typing import Any

__all__ = ["draw_surface_controls", "SURFACE_HINTS"]

#: What to do next, per surface tool (shown at the top of the panel).
SURFACE_HINTS = {
    "bulge": "left-drag a stroke on the skin",
    "silhouette": "left-drag beside an outline",
}


def draw_surface_controls(editor: Any, act: Callable[..., None]) -> None:
    """Draw the controls into the current imgui window for ``editor`` (game.editor.Editor); ``act(name,
    **args)`` pushes an Action. Nothing is drawn outside the surface tools."""
    from imgui_bundle import imgui

    from engine.skinning.edits import EASINGS
    from game.editor.state import SURFACE_PROFILES, SURFACE_SOLVERS, SURFACE_TOOLS

    st = editor.state.settings
    if st.tool not in SURFACE_TOOLS:
        return
    imgui.separator_text(f"{st.tool}: {SURFACE_HINTS[st.tool]}")

    def released() -> None:
        if imgui.is_item_deactivated_after_edit():
            act("end_edit")

    def choice(label: str, key: str, options: tuple[str, ...]) -> None:
        cur = getattr(st, key)
        changed, i = imgui.combo(label, options.index(cur) if cur in options else 0, list(options))
        if changed and options[i] != cur:
            act("set", **{key: options[i]})
            act("end_edit")

    if st.tool == "bulge":
        choice("profile", "surface_profile", SURFACE_PROFILES)
        changed, mm = imgui.slider_float("height mm (=/-)", st.surface_height * 1e3, -100.0, 100.0, "%.0f")
        if changed:
            act("set", surface_height=round(float(mm)) / 1e3)
        released()
        if st.surface_profile == "bulge":
            choice("easing", "surface_ease", tuple(EASINGS))
        else:
            for key, label, lo, hi in (("surface_waves", "waves", 0.25, 8.0), ("surface_speed", "waves/s", -4.0, 4.0)):
                changed, v = imgui.slider_float(label, float(getattr(st, key)), lo, hi, "%.2f")
                if changed:
                    act("set", **{key: float(v)})
                released()
    else:
        choice("solver", "surface_solver", SURFACE_SOLVERS)
    changed, n = imgui.slider_int("rings (R)", int(st.surface_rings), 0, 16)
    if changed:
        act("set", surface_rings=int(n))
    released()
    changed, k = imgui.slider_float("stiffness", float(st.surface_stiffness), 0.0, 50.0, "%.1f")
    if changed:
        act("set", surface_stiffness=float(k))
    released()
    active = editor.surface.active
    if active is not None:
        imgui.text(f"editing: {active.tool} #{active.index + 1} ({active.key.export_key})")
