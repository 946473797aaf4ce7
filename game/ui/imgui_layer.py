"""The imgui layer: a Dear ImGui + ImPlot context (imgui-bundle), a moderngl renderer for its draw data, input
fed from a pyglet window, and an offscreen mode (no window: headless runs and tests draw into any framebuffer).

    layer = ImGuiLayer(ctx, 1280, 720)          # offscreen until attach_window(window)
    def panels() -> None:                       # imgui / implot calls
        imgui.text("hello")
    layer.draw(panels, framebuffer)             # new frame -> panels() -> render into the framebuffer

The renderer is ours (no PyOpenGL): one program, one dynamic vertex buffer and index buffer, a scissor rect
per draw command; textures follow imgui's ``RendererHasTextures`` protocol (the font atlas is created, grown
and destroyed through ``platform_io.textures``). The profiler overlay (game/ui/profiler.py) and the editor
share this layer. Each layer owns its own imgui and implot contexts and makes them current while it draws,
so several layers (tests, a second window) do not interfere.
"""
from __future__ import annotations

import ctypes
import time
from collections.abc import Callable
from typing import Any

import moderngl
import numpy as np
from imgui_bundle import imgui, implot

from engine.gpu.shaderlib import uniform

__all__ = ["ImGuiLayer", "PYGLET_KEYS"]

_VERTEX = """
#version 330
uniform mat4 u_proj;
in vec2 in_pos;
in vec2 in_uv;
in vec4 in_color;
out vec2 v_uv;
out vec4 v_color;
void main() {
    v_uv = in_uv;
    v_color = in_color;
    gl_Position = u_proj * vec4(in_pos, 0.0, 1.0);
}
"""

_FRAGMENT = """
#version 330
uniform sampler2D u_texture;
in vec2 v_uv;
in vec4 v_color;
out vec4 f_color;
void main() {
    f_color = v_color * texture(u_texture, v_uv);
}
"""


def _pyglet_keys() -> dict[int, Any]:
    """pyglet key symbol -> imgui key, for the keys widgets use (navigation, editing, shortcuts)."""
    try:
        from pyglet.window import key
    except Exception:  # noqa: BLE001 - pyglet without a display backend: no keyboard to map
        return {}
    k = imgui.Key
    pairs = {
        key.TAB: k.tab, key.LEFT: k.left_arrow, key.RIGHT: k.right_arrow, key.UP: k.up_arrow,
        key.DOWN: k.down_arrow, key.PAGEUP: k.page_up, key.PAGEDOWN: k.page_down, key.HOME: k.home,
        key.END: k.end, key.INSERT: k.insert, key.DELETE: k.delete, key.BACKSPACE: k.backspace,
        key.SPACE: k.space, key.ENTER: k.enter, key.ESCAPE: k.escape, key.A: k.a, key.C: k.c, key.V: k.v,
        key.X: k.x, key.Y: k.y, key.Z: k.z, key.LCTRL: k.left_ctrl, key.RCTRL: k.right_ctrl,
        key.LSHIFT: k.left_shift, key.RSHIFT: k.right_shift, key.LALT: k.left_alt, key.RALT: k.right_alt,
    }
    return pairs


#: pyglet key symbol -> imgui key (filled lazily: importing pyglet.window needs no display, but keep it cheap)
PYGLET_KEYS: dict[int, Any] = {}


class ImGuiLayer:
    """An imgui + implot context drawn with moderngl into a framebuffer (see the module docstring)."""

    def __init__(self, ctx: moderngl.Context, width: int, height: int, *, font_scale: float = 1.0) -> None:
        for what, v in (("width", width), ("height", height)):
            if isinstance(v, bool) or not isinstance(v, (int, np.integer)) or not 1 <= int(v) <= 16384:
                raise ValueError(f"{what} must be an integer in [1, 16384], got {v!r}")
        if not (isinstance(font_scale, (int, float)) and 0.25 <= font_scale <= 8.0):
            raise ValueError(f"font_scale must be in [0.25, 8], got {font_scale!r}")
        self.ctx = ctx
        self.width, self.height = int(width), int(height)
        self._imgui = imgui.create_context()
        self._implot = implot.create_context()
        self._released = False
        self._use()
        io = imgui.get_io()
        io.set_ini_filename("")  # no imgui.ini written next to the user's files
        io.backend_flags |= imgui.BackendFlags_.renderer_has_textures
        pio = imgui.get_platform_io()
        limit = int(ctx.info.get("GL_MAX_TEXTURE_SIZE", 4096))
        pio.renderer_texture_max_width = limit
        pio.renderer_texture_max_height = limit
        imgui.get_style().font_scale_main = float(font_scale)
        imgui.style_colors_dark()
        self.program = ctx.program(vertex_shader=_VERTEX, fragment_shader=_FRAGMENT)
        uniform(self.program, "u_texture").value = 0
        self._vbo = ctx.buffer(reserve=1 << 16, dynamic=True)
        self._ibo = ctx.buffer(reserve=1 << 16, dynamic=True)
        self._vao = self._make_vao()
        self._textures: dict[int, moderngl.Texture] = {}
        self._last = time.perf_counter()
        self.window: Any = None
        #: commands drawn by the last frame (tests: something was drawn)
        self.last_draw_commands = 0

    # -- contexts -------------------------------------------------------------------------------------------
    def _use(self) -> None:
        if self._released:
            raise RuntimeError("this ImGuiLayer was released")
        imgui.set_current_context(self._imgui)
        implot.set_current_context(self._implot)

    def _make_vao(self) -> moderngl.VertexArray:
        fmt = "2f 2f 4f1"  # ImDrawVert: pos (2 float), uv (2 float), colour (4 normalised bytes)
        assert imgui.VERTEX_SIZE == 20
        return self.ctx.vertex_array(self.program, [(self._vbo, fmt, "in_pos", "in_uv", "in_color")],
                                     index_buffer=self._ibo, index_element_size=imgui.INDEX_SIZE)

    def resize(self, width: int, height: int) -> None:
        """The display size in pixels (the target framebuffer's size)."""
        if width < 1 or height < 1:
            raise ValueError(f"the imgui display must be at least 1x1 pixels, got {width}x{height}")
        self.width, self.height = int(width), int(height)

    @property
    def wants_mouse(self) -> bool:
        """imgui is under the mouse (or dragging): the camera should not take the event."""
        self._use()
        return bool(imgui.get_io().want_capture_mouse)

    @property
    def wants_keyboard(self) -> bool:
        self._use()
        return bool(imgui.get_io().want_capture_keyboard)

    # -- one frame -----------------------------------------------------------------------------------------
    def draw(self, build: Callable[[], None], target: moderngl.Framebuffer, *, dt: float | None = None) -> None:
        """Run one imgui frame: ``build()`` makes the imgui/implot calls, the draw data is rendered into
        ``target`` (blended over what it holds). ``dt``: seconds since the last frame (default: measured)."""
        self._use()
        now = time.perf_counter()
        step = now - self._last if dt is None else float(dt)
        self._last = now
        io = imgui.get_io()
        io.display_size = imgui.ImVec2(float(self.width), float(self.height))
        io.delta_time = min(max(step, 1e-4), 1.0)
        imgui.new_frame()
        try:
            build()
        finally:
            imgui.render()
        self._update_textures()
        self._render(imgui.get_draw_data(), target)

    def _update_textures(self) -> None:
        for tex in imgui.get_platform_io().textures:
            status = tex.status
            if status == imgui.ImTextureStatus.ok:
                continue
            if status in (imgui.ImTextureStatus.want_create, imgui.ImTextureStatus.want_updates):
                if tex.format != imgui.ImTextureFormat.rgba32:
                    raise ValueError(f"imgui texture format {tex.format!r} is not RGBA32")
                pixels = np.ascontiguousarray(tex.get_pixels_array(), np.uint8)
                gl_tex = self._textures.get(tex.tex_id) if status == imgui.ImTextureStatus.want_updates else None
                if gl_tex is None or gl_tex.size != (tex.width, tex.height):
                    if gl_tex is not None:
                        self._textures.pop(gl_tex.glo).release()
                    gl_tex = self.ctx.texture((tex.width, tex.height), 4, dtype="f1")
                    gl_tex.filter = (moderngl.LINEAR, moderngl.LINEAR)
                    gl_tex.repeat_x = gl_tex.repeat_y = False
                    self._textures[gl_tex.glo] = gl_tex
                gl_tex.write(pixels.tobytes())  # whole atlas: simpler than sub-rects, and rare
                tex.set_tex_id(gl_tex.glo)
                tex.status = imgui.ImTextureStatus.ok
            elif status == imgui.ImTextureStatus.want_destroy and tex.unused_frames > 0:
                gl_tex = self._textures.pop(tex.tex_id, None)
                if gl_tex is not None:
                    gl_tex.release()
                tex.set_tex_id(0)
                tex.status = imgui.ImTextureStatus.destroyed

    def _render(self, draw_data: Any, target: moderngl.Framebuffer) -> None:
        w, h = self.width, self.height
        proj = np.array([[2.0 / w, 0, 0, 0], [0, -2.0 / h, 0, 0], [0, 0, -1.0, 0], [-1.0, 1.0, 0, 1.0]], np.float32)
        uniform(self.program, "u_proj").write(proj.tobytes())
        ctx = self.ctx
        target.use()
        ctx.viewport = (0, 0, w, h)
        ctx.disable(moderngl.DEPTH_TEST | moderngl.CULL_FACE)
        ctx.enable(moderngl.BLEND)
        # separate alpha factors (imgui's blending); moderngl's stubs only know the two-factor form
        ctx.blend_func = (moderngl.SRC_ALPHA, moderngl.ONE_MINUS_SRC_ALPHA,  # type: ignore[assignment]
                          moderngl.ONE, moderngl.ONE_MINUS_SRC_ALPHA)
        ctx.blend_equation = moderngl.FUNC_ADD  # type: ignore[assignment]
        commands = 0
        try:
            for cmd_list in draw_data.cmd_lists:
                vbytes = cmd_list.vtx_buffer.size() * imgui.VERTEX_SIZE
                ibytes = cmd_list.idx_buffer.size() * imgui.INDEX_SIZE
                if vbytes == 0 or ibytes == 0:
                    continue
                for buf, addr, n in ((self._vbo, cmd_list.vtx_buffer.data_address(), vbytes),
                                     (self._ibo, cmd_list.idx_buffer.data_address(), ibytes)):
                    if buf.size < n:
                        buf.orphan(max(n, 2 * buf.size))
                    buf.write(ctypes.string_at(addr, n))
                for cmd in cmd_list.cmd_buffer:
                    x0, y0, x1, y1 = cmd.clip_rect.x, cmd.clip_rect.y, cmd.clip_rect.z, cmd.clip_rect.w
                    if x1 <= x0 or y1 <= y0 or cmd.elem_count == 0:
                        continue
                    tex = self._textures.get(cmd.tex_ref.get_tex_id())
                    if tex is None:
                        continue
                    tex.use(0)
                    ctx.scissor = (int(x0), int(h - y1), int(x1 - x0), int(y1 - y0))
                    self._vao.render(moderngl.TRIANGLES, vertices=cmd.elem_count, first=cmd.idx_offset)
                    commands += 1
        finally:
            ctx.scissor = None
            ctx.disable(moderngl.BLEND)
        self.last_draw_commands = commands

    # -- input ---------------------------------------------------------------------------------------------
    def attach_window(self, window: Any) -> None:
        """Feed the window's mouse, wheel, text and keys to imgui (pyglet handlers pushed on top: an event
        imgui captures is not passed on to the camera)."""
        if not PYGLET_KEYS:
            PYGLET_KEYS.update(_pyglet_keys())
        self.window = window
        window.push_handlers(self)

    def _mouse(self, x: float, y: float) -> None:
        self._use()
        fb_w, fb_h = self.window.get_framebuffer_size() if self.window is not None else (self.width, self.height)
        win_w, win_h = self.window.get_size() if self.window is not None else (self.width, self.height)
        sx, sy = fb_w / max(win_w, 1), fb_h / max(win_h, 1)
        imgui.get_io().add_mouse_pos_event(float(x) * sx, float(win_h - y) * sy)

    def on_mouse_motion(self, x: float, y: float, dx: float, dy: float) -> bool:
        self._mouse(x, y)
        return False

    def on_mouse_drag(self, x: float, y: float, dx: float, dy: float, buttons: int, modifiers: int) -> bool:
        self._mouse(x, y)
        return self.wants_mouse

    def on_mouse_press(self, x: float, y: float, button: int, modifiers: int) -> bool:
        self._mouse(x, y)
        imgui.get_io().add_mouse_button_event(_button(button), True)
        return self.wants_mouse

    def on_mouse_release(self, x: float, y: float, button: int, modifiers: int) -> bool:
        self._mouse(x, y)
        imgui.get_io().add_mouse_button_event(_button(button), False)
        return self.wants_mouse

    def on_mouse_scroll(self, x: float, y: float, scroll_x: float, scroll_y: float) -> bool:
        self._mouse(x, y)
        imgui.get_io().add_mouse_wheel_event(float(scroll_x), float(scroll_y))
        return self.wants_mouse

    def on_text(self, text: str) -> bool:
        self._use()
        for ch in text:
            imgui.get_io().add_input_character(ord(ch))
        return self.wants_keyboard

    def on_key_press(self, symbol: int, modifiers: int) -> bool:
        return self._key(symbol, True)

    def on_key_release(self, symbol: int, modifiers: int) -> bool:
        return self._key(symbol, False)

    def _key(self, symbol: int, down: bool) -> bool:
        self._use()
        k = PYGLET_KEYS.get(symbol)
        if k is not None:
            imgui.get_io().add_key_event(k, down)
        return self.wants_keyboard

    # -- lifetime ------------------------------------------------------------------------------------------
    def release(self) -> None:
        """Release the GL objects and destroy the imgui / implot contexts. Idempotent."""
        if self._released:
            return
        if self.window is not None:
            self.window.remove_handlers(self)
            self.window = None
        for tex in self._textures.values():
            tex.release()
        self._textures.clear()
        for obj in (self._vao, self._vbo, self._ibo, self.program):
            obj.release()
        implot.destroy_context(self._implot)
        imgui.destroy_context(self._imgui)
        self._released = True


def _button(pyglet_button: int) -> int:
    """pyglet mouse button bit -> imgui button index (left 0, right 1, middle 2)."""
    return {1: 0, 4: 1, 2: 2}.get(int(pyglet_button), 0)
