"""The hand menu of a VR session: an imgui panel (the application's imgui layer, game/ui/imgui_layer.py) drawn
offscreen every frame onto a textured quad that rides on the left controller, seen by both eyes at its depth.

It switches the tool (pose, bulge, silhouette, orbit), sets the active tool's parameters (the pose tool's brush
radius, the bulge tool's height and rings) and has undo / redo buttons. The right controller points at it: where
its -Z ray meets the quad is imgui's mouse, and its trigger (value >= 0.5) is the mouse button; while the ray
is on the menu the trigger clicks instead of drawing. Every change is a VR action the session applies (so a
recording replays it: the menu sees the same tracked samples and the same frame time).

The quad is :data:`SIZE` metres square, :data:`OFFSET` metres above the left controller along its +Y axis and
facing its +Z (towards the user holding it); it belongs to no character, so the controller camera never lands
on it.
"""
from __future__ import annotations

from typing import Any

import numpy as np

from engine.input.vr import pose_matrix

__all__ = ["HandMenu", "SIZE", "OFFSET", "PIXELS"]

SIZE = 0.16
OFFSET = 0.12
PIXELS = 256


class HandMenu:
    """The menu of ``vr`` (a game.vr.session.VRSession) offering ``tools``; :meth:`release` frees its GPU
    objects."""

    def __init__(self, vr: Any, tools: tuple[str, ...]) -> None:
        from game.ui.imgui_layer import ImGuiLayer

        self.vr = vr
        self.tools = tuple(tools)
        s = vr.s
        self.ctx = s.ctx
        self.layer = ImGuiLayer(self.ctx, PIXELS, PIXELS, cached=False, font_scale=1.0)
        self.texture = s.resources.texture((PIXELS, PIXELS), 4, label="hand menu")
        self.fbo = s.resources.framebuffer([self.texture], label="hand menu")
        self.handle: Any = None
        self.pose: np.ndarray | None = None  # the quad's world matrix (centre, +X right, +Y up, +Z its normal)
        #: where the right controller's ray meets the menu, in menu pixels (None: off the menu)
        self.pointer: tuple[float, float] | None = None
        #: item rectangles of the last frame (name -> (x0, y0, x1, y1) pixels, row 0 at the top): tests aim at them
        self.rects: dict[str, tuple[float, float, float, float]] = {}
        self._down = False
        self._actions: list[tuple[str, Any]] = []

    # -- geometry ------------------------------------------------------------------------------------
    def _quad(self) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        h = SIZE / 2.0
        pos = np.array([[-h, -h, 0], [h, -h, 0], [h, h, 0], [-h, h, 0]], np.float64)
        tri = np.array([[0, 1, 2], [0, 2, 3]], np.uint32)
        uv = np.array([[0, 1], [1, 1], [1, 0], [0, 0]], np.float32)
        return pos, tri, uv

    def place(self) -> bool:
        """Follow the left controller (hidden while it is not tracked); True when the menu is shown."""
        left = self.vr.world_pose("left")
        r = self.vr.s.renderer
        if left is None:
            if self.handle is not None:
                self.handle.visible = False
                r.invalidate()
            self.pose = None
            return False
        m = left.copy()
        m[:3, 3] = left[:3, 3] + left[:3, 1] * OFFSET * self.vr.world_scale
        m[:3, :3] = left[:3, :3]
        self.pose = m
        pos, tri, uv = self._quad()
        world = (m[:3, :3] @ (pos * self.vr.world_scale).T).T + m[:3, 3]
        if self.handle is None:
            img = np.zeros((PIXELS, PIXELS, 4), np.uint8)
            self.handle = r.add_mesh(tri, 4, texcoords=uv, image=img, positions=world.astype(np.float32),
                                     label="vr hand menu")
        else:
            r.update_vertices(self.handle, world.astype(np.float32))
            if not self.handle.visible:
                self.handle.visible = True
                r.invalidate()
        return True

    def aim(self, right: Any) -> tuple[float, float] | None:
        """Menu pixel (x, y from the top) where the right controller's -Z ray meets the quad, or None."""
        if self.pose is None or right is None:
            return None
        c = self.vr.tracking_to_world @ pose_matrix(right.position, right.orientation)
        o, d = c[:3, 3], -c[:3, 2]
        n, p0 = self.pose[:3, 2], self.pose[:3, 3]
        den = float(d @ n)
        if abs(den) < 1e-9:
            return None
        t = float((p0 - o) @ n) / den
        if t <= 0:
            return None
        hit = o + d * t - p0
        half = SIZE / 2.0 * self.vr.world_scale
        u, v = float(hit @ self.pose[:3, 0]), float(hit @ self.pose[:3, 1])
        if abs(u) > half or abs(v) > half:
            return None
        return ((u / half + 1.0) / 2.0 * PIXELS, (1.0 - v / half) / 2.0 * PIXELS)

    # -- the panel ---------------------------------------------------------------------------------------
    def update(self, right: Any, dt: float) -> bool:
        """Place the menu, feed imgui the pointer and trigger, draw the panel onto the quad; returns whether
        the right controller points at the menu (its trigger is the menu's then). The actions the panel chose
        are in :meth:`take_actions`."""
        from imgui_bundle import imgui

        from engine.render.meshes import albedo_levels

        if not self.place():
            self.pointer = None
            return False
        self.pointer = self.aim(right)
        down = right is not None and right.pressure >= 0.5 and self.pointer is not None
        layer = self.layer
        layer._use()
        io = imgui.get_io()
        if self.pointer is not None:
            io.add_mouse_pos_event(*self.pointer)
        else:
            io.add_mouse_pos_event(-1.0, -1.0)
        if down != self._down:
            io.add_mouse_button_event(0, down)
            self._down = down
        self.fbo.use()
        self.fbo.clear(0.1, 0.1, 0.12, 1.0)
        layer.draw(self._build, self.fbo, dt=dt)
        img = np.frombuffer(self.fbo.read(components=4, alignment=1), np.uint8).reshape(PIXELS, PIXELS, 4)[::-1]
        tex = self.handle.texture
        for k, lv in enumerate(albedo_levels(np.ascontiguousarray(img))):
            tex.write(np.ascontiguousarray(lv).tobytes(), level=k)
        return self.pointer is not None

    def _rect(self, name: str) -> None:
        from imgui_bundle import imgui

        a, b = imgui.get_item_rect_min(), imgui.get_item_rect_max()
        self.rects[name] = (a.x, a.y, b.x, b.y)

    def _build(self) -> None:
        from imgui_bundle import imgui

        vr = self.vr
        imgui.set_next_window_pos(imgui.ImVec2(0, 0))
        imgui.set_next_window_size(imgui.ImVec2(PIXELS, PIXELS))
        flags = imgui.WindowFlags_.no_decoration | imgui.WindowFlags_.no_move | imgui.WindowFlags_.no_saved_settings
        imgui.begin("hand menu", None, flags)
        imgui.text("tool")
        for tool in self.tools:
            if imgui.radio_button(tool, vr.tool == tool):
                self._actions.append((f"tool:{tool}", None))
            self._rect(f"tool:{tool}")
            if tool != self.tools[-1]:
                imgui.same_line()
        imgui.separator()
        if vr.tool == "pose":
            changed, value = imgui.slider_float("radius m", vr.brush_radius, 0.02, 0.5)
            self._rect("brush_radius")
            if changed:
                self._actions.append(("set:brush_radius", float(value)))
        elif vr.tool == "bulge":
            changed, value = imgui.slider_float("height m", float(vr.bulge.get("height", 0.02)), -0.1, 0.1)
            self._rect("bulge.height")
            if changed:
                self._actions.append(("set:bulge.height", float(value)))
            changed, rings = imgui.slider_int("rings", int(vr.bulge.get("rings", 4)), 0, 12)
            self._rect("bulge.rings")
            if changed:
                self._actions.append(("set:bulge.rings", int(rings)))
        imgui.separator()
        if imgui.button("undo"):
            self._actions.append(("undo", None))
        self._rect("undo")
        imgui.same_line()
        if imgui.button("redo"):
            self._actions.append(("redo", None))
        self._rect("redo")
        imgui.end()

    def take_actions(self) -> list[tuple[str, Any]]:
        out, self._actions = self._actions, []
        return out

    def release(self) -> None:
        r = self.vr.s.renderer
        if self.handle is not None:
            r.remove_mesh(self.handle)
            self.handle = None
        self.layer.release()
        res = self.vr.s.resources
        res.release(self.fbo)
        res.release(self.texture)
