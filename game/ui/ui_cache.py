"""The UI layer cache: imgui's draw data is rasterised into an RGBA layer only where it changed, and the layer is
composited over every frame with one blended draw that covers the panels and nothing else.

Why: an immediate-mode UI rebuilds its draw data every frame, but its pixels rarely change (a slider moves, a
number ticks); on a software rasteriser (llvmpipe) re-rasterising every panel every frame, with several
blended layers per pixel (window background, frames, text), is most of the UI's cost. Retained UIs and engine
HUDs cache for the same reason.

How (see :class:`UICache`):

* Each imgui draw list (one per window, plus the background/foreground lists) becomes a :class:`DrawList`: a
  digest of its vertex and index bytes and its commands (scissor, texture, counts), and the pixel rectangle
  it can touch (its vertices' bounding box within its commands' scissors). The display size is part of the
  layer: a resize re-renders everything, as does a font-atlas update.
* Comparing with the previous frame's lists, position by position (imgui keeps windows in z-order), gives the
  dirty rectangles: the old and new rectangle of every list that changed, appeared, vanished or moved in the
  z-order. Overlapping dirty rectangles are merged; each is cleared to transparent and every list touching it
  is drawn again inside it (scissor = command scissor within the dirty rectangle), so the layer is always
  what drawing every list from scratch would give.
* The layer holds premultiplied colour: imgui's blending (``SRC_ALPHA, ONE_MINUS_SRC_ALPHA`` for colour,
  ``ONE, ONE_MINUS_SRC_ALPHA`` for alpha) onto transparent black accumulates ``sum(colour * alpha)``, which is
  "over" in premultiplied form; the composite blends it with ``ONE, ONE_MINUS_SRC_ALPHA``, one quad per
  rectangle of a disjoint cover of the lists' rectangles (no pixel is blended twice). The layer is RGBA8 like
  the frame: the premultiplied colour is rounded once more than drawing straight into the frame rounds it, so
  the two differ by at most 2 levels (of 255) on some pixels (the test's tolerance); an RGBA16F layer measured
  no closer (llvmpipe's 8-bit blending rounds its own way) and costs twice the memory traffic.
* The composite samples every pixel it covers, so its cost is the covered area: a list whose scissor is large
  (the background list: strokes, the posing plane's outline) is covered by the tiles its triangles touch, not
  by its bounding box.
* Opaque panels: a list may carry a ``backdrop``, a rectangle the layer holds fully opaque (its drawer cleared
  it to an opaque colour before drawing the list, game/ui/imgui_layer.py ``opaque_panels``). Over an opaque
  pixel, ``ONE, ONE_MINUS_SRC_ALPHA`` blending is a copy, so those rectangles are copied into the target with
  ``glBlitFramebuffer`` (same format, no scaling, no scissor: llvmpipe copies memory rows instead of
  rasterising a blended, texture-sampling quad) and only the rest of the cover (strokes, window edges off
  the pixel grid, what lies outside every backdrop) goes through the blended draw. Both give the same pixels.

Rectangles are ``(x0, y0, x1, y1)`` integer pixels in GL window coordinates (row 0 at the bottom), x1/y1
exclusive, the convention of scissors and clears.
"""
from __future__ import annotations

import ctypes
from collections.abc import Iterable, Sequence
from typing import NamedTuple

import moderngl
import numpy as np

from engine.gpu.glfunc import gl_function
from engine.gpu.shaderlib import uniform

__all__ = ["Rect", "DrawCommand", "DrawList", "UICache", "intersect", "merge_overlapping", "disjoint_cover",
           "dirty_rects", "tile_cover", "subtract", "TILE"]

Rect = tuple[int, int, int, int]

# texture() at the pixel centres with NEAREST filtering reads exactly the layer's pixel; llvmpipe runs it
# faster than texelFetch(gl_FragCoord) (measured ~20 % on the composite)
_COMPOSITE_VERTEX = """
#version 330
uniform vec2 u_size;
in vec2 in_pos;
out vec2 v_uv;
void main() {
    v_uv = in_pos / u_size;
    gl_Position = vec4(v_uv * 2.0 - 1.0, 0.0, 1.0);
}
"""

_COMPOSITE_FRAGMENT = """
#version 330
uniform sampler2D u_layer;
in vec2 v_uv;
out vec4 f_color;
void main() {
    f_color = texture(u_layer, v_uv);
}
"""

#: composite quads the vertex buffer holds before it grows (6 vertices of 2 floats each)
_QUADS_RESERVED = 64

_GL_READ_FRAMEBUFFER = 0x8CA8
_GL_COLOR_BUFFER_BIT = 0x4000
_GL_NEAREST = 0x2600


class DrawCommand(NamedTuple):
    """One imgui draw command: ``elements`` indices from ``first`` (counted from the start of its list's
    indices) with texture ``texture`` inside ``scissor`` (GL rectangle)."""

    first: int
    elements: int
    texture: int
    scissor: Rect


class DrawList(NamedTuple):
    """One imgui draw list of a frame, as the cache sees it: ``digest`` identifies its vertex and index bytes,
    ``commands`` what drawing it takes, ``rect`` the pixels it can touch (None: none); ``base`` is where its
    indices start in the frame's combined index buffer (not part of its content); ``cover``: rectangles
    within ``rect`` that hold every pixel it draws, when tighter than ``rect`` itself (else empty);
    ``backdrop``: a rectangle within ``rect`` cleared to an opaque colour before the list is drawn (an opaque
    panel; None: none), which the composite copies instead of blending."""

    digest: tuple[int, ...]
    commands: tuple[DrawCommand, ...]
    rect: Rect | None
    base: int = 0
    cover: tuple[Rect, ...] = ()
    backdrop: Rect | None = None

    @property
    def covered(self) -> tuple[Rect, ...]:
        """The rectangles the composite blends for this list."""
        return self.cover or ((self.rect,) if self.rect is not None else ())

    def same(self, other: DrawList) -> bool:
        """Whether both draw the same pixels (the same content at the same place)."""
        return (self.digest == other.digest and self.rect == other.rect and self.commands == other.commands
                and self.backdrop == other.backdrop)


def intersect(a: Rect, b: Rect) -> Rect | None:
    """The common part of two rectangles; None when they do not overlap."""
    x0, y0, x1, y1 = max(a[0], b[0]), max(a[1], b[1]), min(a[2], b[2]), min(a[3], b[3])
    return (x0, y0, x1, y1) if x0 < x1 and y0 < y1 else None


def _bounds(a: Rect, b: Rect) -> Rect:
    return min(a[0], b[0]), min(a[1], b[1]), max(a[2], b[2]), max(a[3], b[3])


def merge_overlapping(rects: Iterable[Rect]) -> list[Rect]:
    """Rectangles no two of which overlap: overlapping ones are replaced by their bounding box until none do
    (each pixel of the input is in exactly one output rectangle; the output may cover more)."""
    out: list[Rect] = []
    for r in rects:
        if r[0] >= r[2] or r[1] >= r[3]:
            continue
        merged = True
        while merged:
            merged = False
            for i, o in enumerate(out):
                if intersect(o, r) is not None:
                    r = _bounds(o, r)
                    del out[i]
                    merged = True
                    break
        out.append(r)
    return out


def disjoint_cover(rects: Iterable[Rect]) -> list[Rect]:
    """Non-overlapping rectangles whose union is exactly the union of ``rects`` (columns between the x
    edges, each split into its covered y intervals; equal neighbouring columns joined)."""
    rs = [r for r in rects if r[0] < r[2] and r[1] < r[3]]
    if not rs:
        return []
    xs = sorted({x for r in rs for x in (r[0], r[2])})
    columns: list[tuple[int, int, list[tuple[int, int]]]] = []
    for xa, xb in zip(xs, xs[1:]):
        spans = sorted((r[1], r[3]) for r in rs if r[0] <= xa and r[2] >= xb)
        merged: list[tuple[int, int]] = []
        for y0, y1 in spans:
            if merged and y0 <= merged[-1][1]:
                merged[-1] = (merged[-1][0], max(merged[-1][1], y1))
            else:
                merged.append((y0, y1))
        if not merged:
            continue
        if columns and columns[-1][1] == xa and columns[-1][2] == merged:
            columns[-1] = (columns[-1][0], xb, merged)
        else:
            columns.append((xa, xb, merged))
    return [(xa, y0, xb, y1) for xa, xb, spans in columns for y0, y1 in spans]


def subtract(rects: Iterable[Rect], holes: Iterable[Rect]) -> list[Rect]:
    """Non-overlapping rectangles whose union is the union of ``rects`` less the union of ``holes`` (a grid
    on every rectangle's edges; cells inside some rectangle and no hole, joined along rows, then
    :func:`disjoint_cover`)."""
    rs = [r for r in rects if r[0] < r[2] and r[1] < r[3]]
    hs = [h for h in holes if h[0] < h[2] and h[1] < h[3]]
    if not rs or not hs:
        return disjoint_cover(rs)
    xs = sorted({v for r in rs + hs for v in (r[0], r[2])})
    ys = sorted({v for r in rs + hs for v in (r[1], r[3])})
    xi, yi = {x: i for i, x in enumerate(xs)}, {y: i for i, y in enumerate(ys)}
    inside = [[False] * (len(xs) - 1) for _ in range(len(ys) - 1)]
    for grid_rects, value in ((rs, True), (hs, False)):
        for x0, y0, x1, y1 in grid_rects:
            for row in inside[yi[y0]:yi[y1]]:
                row[xi[x0]:xi[x1]] = [value] * (xi[x1] - xi[x0])
    out: list[Rect] = []
    for j, row in enumerate(inside):
        i = 0
        while i < len(row):
            if not row[i]:
                i += 1
                continue
            start = i
            while i < len(row) and row[i]:
                i += 1
            out.append((xs[start], ys[j], xs[i], ys[j + 1]))
    return disjoint_cover(out)


#: the tile size (pixels) of :func:`tile_cover`
TILE = 32


def tile_cover(boxes: np.ndarray, height: int, within: Rect, *, tile: int = TILE) -> tuple[Rect, ...]:
    """Rectangles (GL, disjoint, inside ``within``) made of the ``tile``-pixel tiles that the boxes touch:
    ``boxes`` (N, 4) float ``x0, y0, x1, y1`` in imgui's pixels (row 0 at the top), e.g. triangles' bounds.
    Runs of touched tiles in a tile row become one rectangle."""
    if len(boxes) == 0:
        return ()
    x0 = np.floor(boxes[:, 0]).astype(np.int64) // tile
    x1 = (np.ceil(boxes[:, 2]).astype(np.int64) - 1) // tile
    gy0 = height - np.ceil(boxes[:, 3]).astype(np.int64)  # GL rows
    gy1 = height - np.floor(boxes[:, 1]).astype(np.int64)
    y0, y1 = gy0 // tile, (gy1 - 1) // tile
    lo_x, lo_y = int(x0.min()), int(y0.min())
    grid = np.zeros((int(y1.max()) - lo_y + 1, int(x1.max()) - lo_x + 1), bool)
    for a, b, c, d in zip(x0 - lo_x, x1 - lo_x, y0 - lo_y, y1 - lo_y):
        grid[c:d + 1, a:b + 1] = True
    out: list[Rect] = []
    for row, cells in enumerate(grid):
        edges = np.flatnonzero(np.diff(np.r_[0, cells.view(np.int8), 0]))
        for start, stop in zip(edges[::2], edges[1::2]):
            r = intersect(((lo_x + int(start)) * tile, (lo_y + row) * tile, (lo_x + int(stop)) * tile,
                           (lo_y + row + 1) * tile), within)
            if r is not None:
                out.append(r)
    return tuple(out)


def dirty_rects(previous: Sequence[DrawList], current: Sequence[DrawList]) -> list[Rect]:
    """What changed between two frames' lists, position by position (z-order): the old and the new
    rectangle of every position whose content or rectangle differs or that only one frame has."""
    out: list[Rect] = []
    for i in range(max(len(previous), len(current))):
        old = previous[i] if i < len(previous) else None
        new = current[i] if i < len(current) else None
        if old is not None and new is not None and old.same(new):
            continue
        for d in (old, new):
            if d is not None and d.rect is not None:
                out.append(d.rect)
    return out


class UICache:
    """The cached RGBA layer of one imgui context and its composite (see the module docstring). Owns its
    texture, framebuffer and composite program; :meth:`release` frees them."""

    def __init__(self, ctx: moderngl.Context, width: int, height: int) -> None:
        self.ctx = ctx
        self.program = ctx.program(vertex_shader=_COMPOSITE_VERTEX, fragment_shader=_COMPOSITE_FRAGMENT)
        uniform(self.program, "u_layer").value = 0
        self._vbo = ctx.buffer(reserve=_QUADS_RESERVED * 6 * 2 * 4, dynamic=True)
        self._vao = ctx.vertex_array(self.program, [(self._vbo, "2f", "in_pos")])
        self._quads: list[Rect] = []
        self._vertices = np.zeros((_QUADS_RESERVED * 6, 2), np.float32)
        self.texture: moderngl.Texture | None = None
        self.framebuffer: moderngl.Framebuffer | None = None
        self.width = self.height = 0
        self.lists: list[DrawList] = []
        self._valid = False
        self._blit = gl_function(ctx, "glBlitFramebuffer", *([ctypes.c_int] * 8), ctypes.c_uint, ctypes.c_uint)
        self._bind = gl_function(ctx, "glBindFramebuffer", ctypes.c_uint, ctypes.c_uint)
        #: opaque backdrops are copied (glBlitFramebuffer) rather than blended; off (or no such GL entry
        #: point): everything is blended, the reference the copy is tested against
        self.blit = self._blit is not None and self._bind is not None
        #: what the last composite did: (rectangles copied, rectangles blended)
        self.last_composite = (0, 0)
        self._plan_key: tuple[object, ...] = ()
        self._plan: tuple[list[Rect], list[Rect]] = ([], [])
        self.resize(width, height)

    def resize(self, width: int, height: int) -> None:
        """A new display size: a new (cleared) layer; everything is drawn again on the next frame."""
        if (width, height) == (self.width, self.height) and self.texture is not None:
            return
        self._release_layer()
        self.width, self.height = int(width), int(height)
        self.texture = self.ctx.texture((self.width, self.height), 4, dtype="f1")
        self.texture.filter = (moderngl.NEAREST, moderngl.NEAREST)
        self.framebuffer = self.ctx.framebuffer(color_attachments=[self.texture])
        uniform(self.program, "u_size").value = (float(self.width), float(self.height))
        self.invalidate()

    def invalidate(self) -> None:
        """Forget the layer's content (a texture the UI samples changed): the next frame draws it all."""
        self._valid = False

    def plan(self, lists: Sequence[DrawList]) -> list[Rect]:
        """The rectangles to draw again for this frame's ``lists`` (disjoint), remembering the lists."""
        full = (0, 0, self.width, self.height)
        dirty = [full] if not self._valid else merge_overlapping(dirty_rects(self.lists, lists))
        self.lists = list(lists)
        self._valid = True
        return [c for c in (intersect(r, full) for r in dirty) if c is not None]

    def clear(self, rect: Rect) -> None:
        """Make ``rect`` of the layer transparent black (the caller then redraws it; the layer is bound)."""
        assert self.framebuffer is not None
        x0, y0, x1, y1 = rect
        self.framebuffer.clear(0.0, 0.0, 0.0, 0.0, viewport=(x0, y0, x1 - x0, y1 - y0))

    def composite(self, target: moderngl.Framebuffer) -> int:
        """Put the layer over ``target`` where the current lists draw: the opaque backdrops copied, the rest
        blended with one draw call; returns the number of rectangles (0: nothing drawn). ``target`` must be
        the layer's size and, for the copy, its format (RGBA8)."""
        full = (0, 0, self.width, self.height)
        key = (self.blit, full, tuple((d.covered, d.backdrop) for d in self.lists))
        if key != self._plan_key:  # the rectangles follow from the lists' places alone: most frames reuse them
            opaque = [c for c in (intersect(d.backdrop, full) for d in self.lists if d.backdrop is not None)
                      if c is not None] if self.blit else []
            copied = disjoint_cover(opaque)
            self._plan = copied, subtract((r for d in self.lists for r in d.covered), copied)
            self._plan_key = key
        copied, rects = self._plan
        self.last_composite = (len(copied), len(rects))
        ctx = self.ctx
        target.use()
        ctx.viewport = full
        if copied:
            self._copy(copied, target)
        if not rects:
            return len(copied)
        if rects != self._quads:
            self._write_quads(rects)
        assert self.texture is not None
        ctx.enable(moderngl.BLEND)
        ctx.blend_func = moderngl.ONE, moderngl.ONE_MINUS_SRC_ALPHA
        ctx.blend_equation = moderngl.FUNC_ADD  # type: ignore[assignment]
        self.texture.use(0)
        try:
            self._vao.render(moderngl.TRIANGLES, vertices=6 * len(rects))
        finally:
            ctx.disable(moderngl.BLEND)
        return len(copied) + len(rects)

    def _copy(self, rects: list[Rect], target: moderngl.Framebuffer) -> None:
        """The layer's ``rects`` into ``target`` (bound), one glBlitFramebuffer each, the scissor test off."""
        assert self.framebuffer is not None and self._blit is not None and self._bind is not None
        self.ctx.scissor = None
        self._bind(_GL_READ_FRAMEBUFFER, self.framebuffer.glo)
        try:
            for x0, y0, x1, y1 in rects:
                self._blit(x0, y0, x1, y1, x0, y0, x1, y1, _GL_COLOR_BUFFER_BIT, _GL_NEAREST)
        finally:
            self._bind(_GL_READ_FRAMEBUFFER, target.glo)

    def _write_quads(self, rects: list[Rect]) -> None:
        n = 6 * len(rects)
        if n > len(self._vertices):
            self._vertices = np.zeros((2 * n, 2), np.float32)
            self._vbo.orphan(self._vertices.nbytes)
        r = np.asarray(rects, np.float32)
        x0, y0, x1, y1 = r[:, 0], r[:, 1], r[:, 2], r[:, 3]
        quad = self._vertices[:n].reshape(len(rects), 6, 2)
        for k, (xs, ys) in enumerate(((x0, y0), (x1, y0), (x1, y1), (x0, y0), (x1, y1), (x0, y1))):
            quad[:, k, 0], quad[:, k, 1] = xs, ys
        self._vbo.orphan(self._vbo.size)  # the previous quads may still be read by a queued draw
        self._vbo.write(self._vertices[:n].tobytes())
        self._quads = rects

    def _release_layer(self) -> None:
        for obj in (self.framebuffer, self.texture):
            if obj is not None:
                obj.release()
        self.framebuffer = self.texture = None

    def release(self) -> None:
        """Free the layer, the composite program and its buffers. Idempotent."""
        self._release_layer()
        if self._vao is not None:
            for obj in (self._vao, self._vbo, self.program):
                obj.release()
            self._vao = None  # type: ignore[assignment]
