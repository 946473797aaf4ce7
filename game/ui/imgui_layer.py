"""The imgui layer: a Dear ImGui + ImPlot context (imgui-bundle), a moderngl renderer for its draw data, input
fed from a pyglet window, and an offscreen mode (no window: headless runs and tests draw into any framebuffer).

    layer = ImGuiLayer(ctx, 1280, 720)          # offscreen until attach_window(window)
    def panels() -> None:                       # imgui / implot calls
        imgui.text("hello")
    layer.draw(panels, framebuffer)             # new frame -> panels() -> render into the framebuffer

The renderer is ours (no PyOpenGL): one program; each frame every draw list is copied into one staging array
(indices rebased to it) and uploaded once into one vertex and one index buffer, orphaned first so the CPU never
waits for draws still queued; a scissor rect per draw command. By default the draw data goes through a cached
RGBA layer (game/ui/ui_cache.py): only the rectangles whose draw lists changed are rasterised again, and the
layer is blended over the target with one draw covering the panels (``cached=False``: every command straight
into the target each frame, the reference the cache is tested against). Textures follow imgui's
``RendererHasTextures`` protocol (the font atlas is created, grown and destroyed through
``platform_io.textures``). With ``opaque_panels`` (the default) every top-level window (not a child window)
is drawn over an opaque backdrop of the style's window colour: the panels are opaque whatever background
alpha their builder asked for (rectangular: no window rounding), so the cached layer copies them into the
target instead of blending them (ui_cache.py, "Opaque panels"). The profiler overlay (game/ui/profiler.py)
and the editor share this layer. Each layer owns its own imgui and implot contexts and makes them current
while it draws, so several layers (tests, a second window) do not interfere.
"""
from __future__ import annotations

import ctypes
import math
import time
import zlib
from collections.abc import Callable
from typing import Any

import moderngl
import numpy as np
from imgui_bundle import imgui, implot

from engine.gpu.shaderlib import uniform
from game.ui.ui_cache import DrawCommand, DrawList, Rect, UICache, intersect, tile_cover

__all__ = ["ImGuiLayer", "PYGLET_KEYS"]

# Most of imgui's pixels are flat fills (window backgrounds, frames) whose vertices all carry the atlas's white
# pixel as uv: for those triangles (flagged by the provoking vertex; imgui never mixes white and glyph uvs in
# one triangle) the fragment shader skips the texture fetch, which is most of a software rasteriser's cost.
_VERTEX = """
#version 330
uniform mat4 u_proj;
uniform vec2 u_white;
in vec2 in_pos;
in vec2 in_uv;
in vec4 in_color;
out vec2 v_uv;
out vec4 v_color;
flat out int v_solid;
void main() {
    v_uv = in_uv;
    v_color = in_color;
    v_solid = in_uv == u_white ? 1 : 0;
    gl_Position = u_proj * vec4(in_pos, 0.0, 1.0);
}
"""

_FRAGMENT = """
#version 330
uniform sampler2D u_texture;
in vec2 v_uv;
in vec4 v_color;
flat in int v_solid;
out vec4 f_color;
void main() {
    f_color = v_solid != 0 ? v_color : v_color * texture(u_texture, v_uv);
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


#: imgui's modifier key (a name of imgui.Key) each left/right modifier key sets
_MODIFIER_OF = {imgui.Key.left_ctrl: "mod_ctrl", imgui.Key.right_ctrl: "mod_ctrl",
                imgui.Key.left_shift: "mod_shift", imgui.Key.right_shift: "mod_shift",
                imgui.Key.left_alt: "mod_alt", imgui.Key.right_alt: "mod_alt"}

_VERTEX_SIZE = 20  # ImDrawVert: 2 float pos, 2 float uv, 4 byte colour
_INDEX_SIZE = 4  # ImDrawIdx: uint32 in imgui-bundle

#: pyglet key symbol -> imgui key (filled lazily: importing pyglet.window needs no display, but keep it cheap)
PYGLET_KEYS: dict[int, Any] = {}


class ImGuiLayer:
    """An imgui + implot context drawn with moderngl into a framebuffer (see the module docstring)."""

    def __init__(self, ctx: moderngl.Context, width: int, height: int, *, font_scale: float = 1.0,
                 cached: bool = True, opaque_panels: bool = True, docking: bool = False,
                 ini_path: str | None = None) -> None:
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
        # no imgui.ini written next to the user's files: only where the host asks (the user's config folder)
        io.set_ini_filename(str(ini_path) if ini_path else "")
        #: panels dock into each other and around a central view (game/ui/dock.py)
        self.docking = bool(docking)
        if self.docking:
            io.config_flags |= imgui.ConfigFlags_.docking_enable
        self._font_scale = float(font_scale)
        #: the UI's scale (the window's pixel ratio: framebuffer pixels per window point), see :meth:`set_scale`
        self.scale = 1.0
        #: more reasons than imgui's own for the mouse to stay with the UI (a gizmo under the pointer)
        self.captures_mouse: Callable[[], bool] | None = None
        io.backend_flags |= imgui.BackendFlags_.renderer_has_textures
        pio = imgui.get_platform_io()
        limit = int(ctx.info.get("GL_MAX_TEXTURE_SIZE", 4096))
        pio.renderer_texture_max_width = limit
        pio.renderer_texture_max_height = limit
        imgui.get_style().font_scale_main = float(font_scale)
        imgui.style_colors_dark()
        #: top-level windows get an opaque backdrop (see the module docstring)
        self.opaque_panels = bool(opaque_panels)
        style = imgui.get_style()
        if self.opaque_panels:
            style.window_rounding = style.popup_rounding = 0.0
            for col in (imgui.Col_.window_bg, imgui.Col_.popup_bg):
                c = style.color_(col)
                style.set_color_(col, imgui.ImVec4(c.x, c.y, c.z, 1.0))
        bg = style.color_(imgui.Col_.window_bg)
        self._backdrop_color = (bg.x, bg.y, bg.z, 1.0)
        self.program = ctx.program(vertex_shader=_VERTEX, fragment_shader=_FRAGMENT)
        uniform(self.program, "u_texture").value = 0
        self._vbo = ctx.buffer(reserve=1 << 16, dynamic=True)
        self._ibo = ctx.buffer(reserve=1 << 16, dynamic=True)
        self._vao = self._make_vao()
        self._set_projection()
        self._white = (-1.0, -1.0)  # the atlas's white-pixel uv, as the shader has it
        uniform(self.program, "u_white").value = self._white
        self._textures: dict[int, moderngl.Texture] = {}
        # staging for one frame's draw data: all lists' vertices, their indices as imgui gives them and
        # rebased onto the combined vertex buffer; grown, never shrunk
        self._vtx = np.zeros(4096 * _VERTEX_SIZE, np.uint8)
        self._vtx_words = self._vtx.view(np.float32).reshape(-1, _VERTEX_SIZE // 4)
        self._idx_raw = np.zeros(1 << 14, np.uint32)
        self._idx32 = np.zeros(1 << 14, np.uint32)
        self._counts = (0, 0)
        # the last frame's sparse lists: digest -> (scissor, rect, tile cover), so an unchanged one is not
        # measured again
        self._covers: dict[tuple[int, ...], tuple[Rect, Rect | None, tuple[Rect, ...]]] = {}
        #: the cached layer (None: every frame's draw data is drawn straight into the target)
        self._cache: UICache | None = UICache(ctx, self.width, self.height) if cached else None
        self._last = time.perf_counter()
        self.window: Any = None
        #: commands in the last frame's draw data (what the UI shows; tests: something was drawn)
        self.last_draw_commands = 0
        #: draw calls the last frame rasterised UI with (cached: only those inside changed rectangles)
        self.last_redrawn_commands = 0
        #: the rectangles the last frame drew again (cached mode; GL window coordinates)
        self.last_dirty_rects: list[Rect] = []

    # -- contexts -------------------------------------------------------------------------------------------
    def _use(self) -> None:
        if self._released:
            raise RuntimeError("this ImGuiLayer was released")
        imgui.set_current_context(self._imgui)
        implot.set_current_context(self._implot)

    def _make_vao(self) -> moderngl.VertexArray:
        fmt = "2f 2f 4f1"  # ImDrawVert: pos (2 float), uv (2 float), colour (4 normalised bytes)
        if imgui.VERTEX_SIZE != _VERTEX_SIZE or imgui.INDEX_SIZE != _INDEX_SIZE:
            raise RuntimeError(f"imgui-bundle's ImDrawVert/ImDrawIdx are {imgui.VERTEX_SIZE}/{imgui.INDEX_SIZE} "
                               f"bytes; this renderer reads {_VERTEX_SIZE}/{_INDEX_SIZE}")
        return self.ctx.vertex_array(self.program, [(self._vbo, fmt, "in_pos", "in_uv", "in_color")],
                                     index_buffer=self._ibo, index_element_size=4)

    def resize(self, width: int, height: int) -> None:
        """The display size in pixels (the target framebuffer's size)."""
        if width < 1 or height < 1:
            raise ValueError(f"the imgui display must be at least 1x1 pixels, got {width}x{height}")
        self.width, self.height = int(width), int(height)
        self._set_projection()
        if self._cache is not None:
            self._cache.resize(self.width, self.height)

    def _set_projection(self) -> None:
        """imgui's pixels (row 0 at the top) -> clip space, for the current display size."""
        w, h = self.width, self.height
        proj = np.array([[2.0 / w, 0, 0, 0], [0, -2.0 / h, 0, 0], [0, 0, -1.0, 0], [-1.0, 1.0, 0, 1.0]], np.float32)
        uniform(self.program, "u_proj").write(proj.tobytes())

    @property
    def cached(self) -> bool:
        """Whether the UI is drawn through the cached layer (game/ui/ui_cache.py); settable (off: every
        command straight into the target, each frame)."""
        return self._cache is not None

    @cached.setter
    def cached(self, on: bool) -> None:
        self._use()
        if bool(on) and self._cache is None:
            self._cache = UICache(self.ctx, self.width, self.height)
        elif not on and self._cache is not None:
            self._cache.release()
            self._cache = None

    @property
    def cache(self) -> UICache | None:
        """The cached layer (None when :attr:`cached` is off): its ``blit`` chooses copied or blended opaque
        panels."""
        return self._cache

    @property
    def wants_mouse(self) -> bool:
        """imgui is under the mouse (or dragging), or :attr:`captures_mouse` says so: the camera and the tools
        should not take the event."""
        self._use()
        if imgui.get_io().want_capture_mouse:
            return True
        return bool(self.captures_mouse is not None and self.captures_mouse())

    def set_scale(self, scale: float) -> None:
        """Scale the UI (fonts, paddings, sizes) by ``scale``: the window's DPI as its pixel ratio, so panels
        keep their physical size on a high-DPI screen. Idempotent for the same value."""
        if not (isinstance(scale, (int, float)) and 0.25 <= scale <= 8.0):
            raise ValueError(f"the UI scale must be in [0.25, 8], got {scale!r}")
        self._use()
        if abs(scale - self.scale) < 1e-6:
            return
        style = imgui.get_style()
        style.scale_all_sizes(float(scale) / self.scale)
        style.font_scale_main = self._font_scale * float(scale)
        self.scale = float(scale)

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
                if self._cache is not None:
                    self._cache.invalidate()  # the layer holds pixels sampled from the old texture
            elif status == imgui.ImTextureStatus.want_destroy and tex.unused_frames > 0:
                gl_tex = self._textures.pop(tex.tex_id, None)
                if gl_tex is not None:
                    gl_tex.release()
                tex.set_tex_id(0)
                tex.status = imgui.ImTextureStatus.destroyed

    # -- rendering -----------------------------------------------------------------------------------------
    def _collect(self, draw_data: Any) -> list[DrawList]:
        """Copy every draw list's vertices and indices into the staging arrays (one combined vertex and index
        buffer, indices rebased to it) and describe each list for the cache: digest, rectangle, commands."""
        nv, ni = int(draw_data.total_vtx_count), int(draw_data.total_idx_count)
        if nv * _VERTEX_SIZE > self._vtx.size:
            self._vtx = np.zeros(2 * nv * _VERTEX_SIZE, np.uint8)
            self._vtx_words = self._vtx.view(np.float32).reshape(-1, _VERTEX_SIZE // 4)
        if ni > self._idx_raw.size:
            self._idx_raw = np.zeros(2 * ni, np.uint32)
            self._idx32 = np.zeros(2 * ni, np.uint32)
        h, w = self.height, self.width
        vaddr, iaddr = self._vtx.ctypes.data, self._idx_raw.ctypes.data
        out: list[DrawList] = []
        covers: dict[tuple[int, ...], tuple[Rect, Rect | None, tuple[Rect, ...]]] = {}
        v0 = i0 = 0
        for cmd_list in draw_data.cmd_lists:
            n_v, n_i = cmd_list.vtx_buffer.size(), cmd_list.idx_buffer.size()
            if n_v == 0 or n_i == 0:
                continue
            vb, ib = n_v * _VERTEX_SIZE, n_i * _INDEX_SIZE
            ctypes.memmove(vaddr + v0 * _VERTEX_SIZE, cmd_list.vtx_buffer.data_address(), vb)
            ctypes.memmove(iaddr + i0 * _INDEX_SIZE, cmd_list.idx_buffer.data_address(), ib)
            np.add(self._idx_raw[i0:i0 + n_i], np.uint32(v0), out=self._idx32[i0:i0 + n_i])
            crc = zlib.crc32(self._vtx[v0 * _VERTEX_SIZE:v0 * _VERTEX_SIZE + vb].data)
            crc = zlib.crc32(self._idx_raw[i0:i0 + n_i].data, crc)
            cmds: list[DrawCommand] = []
            clip_union: Rect | None = None
            for cmd in cmd_list.cmd_buffer:
                c = cmd.clip_rect
                x0, y0, x1, y1 = c.x, c.y, c.z, c.w
                if x1 <= x0 or y1 <= y0 or cmd.elem_count == 0:
                    continue
                sx, sy = int(x0), int(h - y1)  # imgui's OpenGL backend's scissor rounding
                scissor = intersect((sx, sy, sx + int(x1 - x0), sy + int(y1 - y0)), (0, 0, w, h))
                if scissor is None:
                    continue
                cmds.append(DrawCommand(cmd.idx_offset, cmd.elem_count, cmd.tex_ref.get_tex_id(), scissor))
                clip_union = scissor if clip_union is None else (
                    min(clip_union[0], scissor[0]), min(clip_union[1], scissor[1]),
                    max(clip_union[2], scissor[2]), max(clip_union[3], scissor[3]))
            backdrop = self._backdrop(cmd_list) if self.opaque_panels else None
            if backdrop is not None:
                clip_union = backdrop if clip_union is None else (
                    min(clip_union[0], backdrop[0]), min(clip_union[1], backdrop[1]),
                    max(clip_union[2], backdrop[2]), max(clip_union[3], backdrop[3]))
            rect, digest = clip_union, (crc, n_v, n_i)
            cover: tuple[Rect, ...] = ()
            if clip_union is not None and _area(clip_union) * 8 > w * h:
                # a large scissor (the background list's is the display): the pixels a triangle covers lie
                # within its vertices' box, so the box and the tiles the triangles touch are tighter
                known = self._covers.get(digest)
                if known is not None and known[0] == clip_union:
                    rect, cover = known[1], known[2]
                else:
                    rect, cover = self._sparse_cover(v0, n_v, i0, n_i, clip_union)
                covers[digest] = (clip_union, rect, cover)
            out.append(DrawList(digest, tuple(cmds), rect, i0, cover, backdrop))
            v0 += n_v
            i0 += n_i
        self._counts = (v0, i0)
        self._covers = covers
        return out

    def _backdrop(self, cmd_list: Any) -> Rect | None:
        """The opaque backdrop (GL rectangle: the whole pixels inside the window) of a top-level or docked
        window's draw list; None for other lists (background, foreground, child regions, windows without a
        background) and off-screen windows."""
        # ``_owner_name`` is imgui's own field (ImDrawList::_OwnerName) as imgui-bundle names it, not ours
        window = imgui.internal.find_window_by_name(cmd_list._owner_name)
        if window is None or window.hidden or window.flags & imgui.WindowFlags_.no_background:
            return None  # a window without a background (the dockspace's host over the whole view): none either
        if window.flags & imgui.WindowFlags_.child_window and window.dock_node is None:
            return None  # a child region inside a panel (a docked panel is flagged a child too: it gets one)
        p, s, h = window.pos, window.size, self.height
        top = p.y
        if window.dock_node is not None:  # the dock node's tab bar over a docked panel is the host's to draw
            top = max(top, window.inner_rect.min.y)
        rect = (math.ceil(p.x), h - math.floor(p.y + s.y), math.floor(p.x + s.x), h - math.ceil(top))
        return intersect(rect, (0, 0, self.width, h))

    def _sparse_cover(self, v0: int, n_v: int, i0: int, n_i: int, clip: Rect) -> tuple[Rect | None, tuple[Rect, ...]]:
        """A list with a large scissor: its vertices' bounding box within the scissor (GL) and the tiles its
        triangles touch (ui_cache.tile_cover)."""
        h = self.height
        pos = self._vtx_words[v0:v0 + n_v, :2]
        xs, ys = pos[:, 0], pos[:, 1]
        box = (math.floor(xs.min()), h - math.ceil(ys.max()), math.ceil(xs.max()), h - math.floor(ys.min()))
        rect = intersect(box, clip)
        if rect is None:
            return None, ()
        tri = pos[self._idx_raw[i0:i0 + n_i - n_i % 3].reshape(-1, 3)]  # (T, 3, 2)
        boxes = np.concatenate([tri.min(axis=1), tri.max(axis=1)], axis=1)
        return rect, tile_cover(boxes, h, rect)

    def _upload(self) -> None:
        """The staged vertices and indices into the GL buffers, orphaned first (queued draws keep reading
        the old storage; the CPU never waits for them)."""
        nv, ni = self._counts
        for buf, data in ((self._vbo, self._vtx[:nv * _VERTEX_SIZE]), (self._ibo, self._idx32[:ni])):
            buf.orphan(buf.size if buf.size >= data.nbytes else max(int(data.nbytes), 2 * buf.size))
            if data.nbytes:
                buf.write(data)

    def _render(self, draw_data: Any, target: moderngl.Framebuffer) -> None:
        lists = self._collect(draw_data)
        self.last_draw_commands = sum(len(d.commands) for d in lists if d.rect is not None)
        ctx = self.ctx
        if self._cache is None:
            self._upload()
            self.last_redrawn_commands = self._submit(lists, target, None)
            return
        dirty = self._cache.plan(lists)
        redrawn = 0
        if dirty:
            self._upload()
            assert self._cache.framebuffer is not None
            for rect in dirty:
                self._cache.clear(rect)
                redrawn += self._submit(lists, self._cache.framebuffer, rect)
        self.last_redrawn_commands = redrawn
        self.last_dirty_rects = dirty
        ctx.scissor = None
        self._cache.composite(target)

    def _submit(self, lists: list[DrawList], target: moderngl.Framebuffer, within: Rect | None) -> int:
        """Draw the lists' commands into ``target`` with imgui's blending (only inside ``within`` when
        given); returns the number of draw calls."""
        ctx = self.ctx
        white = imgui.get_io().fonts.tex_uv_white_pixel
        if (white.x, white.y) != self._white:
            self._white = (white.x, white.y)
            uniform(self.program, "u_white").value = self._white
        target.use()
        ctx.viewport = (0, 0, self.width, self.height)
        ctx.disable(moderngl.DEPTH_TEST | moderngl.CULL_FACE)
        ctx.enable(moderngl.BLEND)
        # separate alpha factors (imgui's blending); moderngl's stubs only know the two-factor form
        ctx.blend_func = (moderngl.SRC_ALPHA, moderngl.ONE_MINUS_SRC_ALPHA,  # type: ignore[assignment]
                          moderngl.ONE, moderngl.ONE_MINUS_SRC_ALPHA)
        ctx.blend_equation = moderngl.FUNC_ADD  # type: ignore[assignment]
        calls = 0
        bound = -1
        try:
            for d in lists:
                if d.rect is None or (within is not None and intersect(d.rect, within) is None):
                    continue
                if d.backdrop is not None:
                    back = d.backdrop if within is None else intersect(d.backdrop, within)
                    if back is not None:
                        x0, y0, x1, y1 = back
                        target.clear(*self._backdrop_color, viewport=(x0, y0, x1 - x0, y1 - y0))
                for cmd in d.commands:
                    scissor = cmd.scissor if within is None else intersect(cmd.scissor, within)
                    tex = self._textures.get(cmd.texture)
                    if scissor is None or tex is None:
                        continue
                    if cmd.texture != bound:
                        tex.use(0)
                        bound = cmd.texture
                    x0, y0, x1, y1 = scissor
                    ctx.scissor = (x0, y0, x1 - x0, y1 - y0)
                    self._vao.render(moderngl.TRIANGLES, vertices=cmd.elements, first=d.base + cmd.first)
                    calls += 1
        finally:
            ctx.scissor = None
            ctx.disable(moderngl.BLEND)
        return calls

    # -- input ---------------------------------------------------------------------------------------------
    def attach_window(self, window: Any) -> None:
        """Feed the window's mouse, wheel, text and keys to imgui (pyglet handlers pushed on top: an event
        imgui captures is not passed on to the camera)."""
        if not PYGLET_KEYS:
            PYGLET_KEYS.update(_pyglet_keys())
        self.window = window
        window.push_handlers(self)
        fb_w, _ = window.get_framebuffer_size()
        win_w, _ = window.get_size()
        self.set_scale(min(8.0, max(0.25, fb_w / max(win_w, 1))))  # the window's DPI (pixel ratio)

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
        io = imgui.get_io()
        k = PYGLET_KEYS.get(symbol)
        if k is not None:
            io.add_key_event(k, down)
            mod = _MODIFIER_OF.get(k)
            if mod is not None:  # imgui tells shortcuts (Ctrl+A in a text field) by its modifier keys
                io.add_key_event(getattr(imgui.Key, mod), down)
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
        if self._cache is not None:
            self._cache.release()
        implot.destroy_context(self._implot)
        imgui.destroy_context(self._imgui)
        self._released = True


def _area(r: Rect) -> int:
    return (r[2] - r[0]) * (r[3] - r[1])


def _button(pyglet_button: int) -> int:
    """pyglet mouse button bit -> imgui button index (left 0, right 1, middle 2)."""
    return {1: 0, 4: 1, 2: 2}.get(int(pyglet_button), 0)
