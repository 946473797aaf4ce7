"""The editor's joint panel, skeleton overlay and rotate gizmo (ImGuizmo from imgui-bundle), drawn inside the
editor's imgui frame (game/editor/window.py). What they change goes out as actions (game/editor/joints.py),
so the gizmo's rotations land in the pose layer and the undo stack like the strokes' and replay the same.

The gizmo is drawn on the background draw list over the whole frame with the scene camera's own view and
projection (the projection already places the image in the docked central view, engine.render.camera
``view_rect``), so its rings sit on the joint as drawn. While the pointer is over the gizmo or drags it, the
mouse stays with the UI (the stroke tools and the camera do not see that drag).
"""
from __future__ import annotations

from typing import Any

import numpy as np

from game.editor.joints import DEFAULT_KEY_CLIP, gizmo_rotation, skeleton_segments
from game.ui.colours import JOINT_RGB, rgba

__all__ = ["JointUI", "gizmo_matrix"]

_BONE = (0.55, 0.85, 1.0, 1.0)  # light blue on a dark rim: visible on light skin and on the dark floor
_SELECTED = (1.0, 0.85, 0.2, 1.0)


def gizmo_matrix(m: np.ndarray) -> list[float]:
    """A 4x4 matrix (numpy, column vectors) as ImGuizmo's 16 floats (column-major)."""
    return [float(v) for v in np.asarray(m, np.float64).T.reshape(16)]


class JointUI:
    """The Joint panel, the skeleton overlay and the gizmo of one :class:`game.editor.window.EditorUI`."""

    def __init__(self, ui: Any) -> None:
        self.ui = ui
        self._using = False  # the gizmo was being dragged last frame
        self._shown = False  # the gizmo was drawn this frame
        self._over = False  # the pointer was over the gizmo (or dragged it) in the last frame

    def captures_mouse(self) -> bool:
        """The pointer is over the gizmo or drags it (the imgui layer keeps the mouse then)."""
        # as of the last frame, like imgui's own want_capture_mouse (ImGuizmo answers inside a frame only)
        return self._shown and self._over

    def draw(self) -> None:
        ed = self.ui.editor
        ch, st = ed.selected, ed.state
        self._shown = False
        if ch is None:
            return
        self._panel(ch, st)
        if st.show_skeleton:
            self._skeleton(ch, st)
        if st.joint is not None and st.joint < int(ch.loaded.rig.count):
            self._gizmo(ch, st.joint)
        elif self._using:
            self._using = False
            self.ui.act("end_edit")

    def _panel(self, ch: Any, st: Any) -> None:
        from imgui_bundle import imgui

        if not self.ui._window("Joint", 8.0, 300.0, 120.0):
            return
        changed, on = imgui.checkbox("skeleton (K)", st.show_skeleton)
        if changed:
            self.ui.act("skeleton", on=bool(on))
        if st.joint is None:
            imgui.text_wrapped("click a joint of the skeleton to rotate it")
        else:
            imgui.text_wrapped(f"joint {st.joint}: {ch.loaded.rig.names[st.joint]}")
            if imgui.button("deselect"):
                self.ui.act("select_joint", joint=None)
        # no live time in the label: a still panel lets the cached UI layer skip redrawing (game/ui/ui_cache.py)
        if imgui.button("key pose at the playhead (Ctrl+K)"):
            self.ui.act("key_pose")
        keys = ch.keyed.get(DEFAULT_KEY_CLIP, {})
        imgui.text_wrapped(f"clip '{DEFAULT_KEY_CLIP}': {len(keys)} key(s)")
        imgui.pop_item_width()
        imgui.end()

    def _skeleton(self, ch: Any, st: Any) -> None:
        from imgui_bundle import imgui

        g, bones, joints = skeleton_segments(ch)
        px = self.ui._memoised("skeleton", (g.tobytes(), self.ui._view_key()), lambda: self._points(g))
        dl = imgui.get_background_draw_list()
        bone = int(imgui.color_convert_float4_to_u32(imgui.ImVec4(*_BONE)))
        dot = int(imgui.color_convert_float4_to_u32(imgui.ImVec4(*rgba(JOINT_RGB))))
        sel = int(imgui.color_convert_float4_to_u32(imgui.ImVec4(*_SELECTED)))
        ok = np.isfinite(px).all(axis=1)
        for c, p in bones:
            if ok[c] and ok[p]:
                a, b = imgui.ImVec2(*px[p]), imgui.ImVec2(*px[c])
                dl.add_line(a, b, 0xAA000000, 4.0)
                dl.add_line(a, b, bone, 2.0)
        for j in joints:
            if ok[j]:
                dl.add_circle_filled(imgui.ImVec2(*px[j]), 4.5 if j != st.joint else 6.5,
                                     sel if j == st.joint else dot)
                dl.add_circle(imgui.ImVec2(*px[j]), 5.0 if j != st.joint else 7.0, 0xFF000000, 12, 1.0)

    def _points(self, g: np.ndarray) -> np.ndarray:
        from engine.authoring.view import window_points

        r = self.ui.editor.session.renderer
        return np.asarray(window_points(self.ui.editor.session.camera, r.width, r.height, g), np.float64)

    def _gizmo(self, ch: Any, joint: int) -> None:
        from imgui_bundle import imgui, imguizmo

        gz = imguizmo.im_guizmo
        s = self.ui.editor.session
        r, cam = s.renderer, s.camera
        gz.begin_frame()
        gz.set_drawlist(imgui.get_background_draw_list())
        gz.set_rect(0.0, 0.0, float(r.width), float(r.height))
        m = np.asarray(ch.joints()[joint], np.float64).copy()
        m[:3, :3] /= np.linalg.norm(m[:3, :3], axis=0, keepdims=True)  # the gizmo rotates a unit frame
        obj = gz.Matrix16(gizmo_matrix(m))
        view = gz.Matrix16(gizmo_matrix(cam.view))
        proj = gz.Matrix16(gizmo_matrix(cam.projection_for(r.width / r.height)))
        changed = gz.manipulate(view, proj, gz.OPERATION.rotate, gz.MODE.local, obj)
        self._shown = True
        if changed:
            new = np.asarray(obj.values, np.float64).reshape(4, 4).T
            q = gizmo_rotation(ch, joint, new)
            self.ui.act("rotate_joint", joint=int(joint), rotation=[float(v) for v in q])
        using = bool(gz.is_using())
        self._over = using or bool(gz.is_over())
        if self._using and not using:
            self.ui.act("end_edit")  # the drag ended: the next rotation is a new undo step
        self._using = using
