"""The ``gbuffer`` and ``layer:NAME`` passes: meshes into a G-buffer straight from the deformed-vertex SSBOs,
and ``rects``, which starts the G-buffers' screen rectangles empty.

``gbuffer`` draws every mesh WITHOUT a layer into ONE scene G-buffer with the hardware depth test: cost grows
with pixels and triangles, not with a framebuffer per mesh. ``layer:NAME`` draws the meshes given layer NAME
into that layer's own G-buffer (research Stage 4 gives every mesh its own framebuffer; here a tool opts in
where it must see a surface whatever covers it: skin under clothes, a character behind another).

Each MATERIAL GROUP (``MeshRegistry.draw_groups``: meshes of one asset and material whose deformed vertices
lie in one pair of pooled buffers, e.g. every character of a crowd) is one instanced draw, a mesh per instance
(per-instance rows in a uniform array: where its vertices start in the bound ranges, its mesh id), so the
submission cost grows with the number of groups, not of meshes; the draw is split only where a flush is due.
Each instance is an indexed draw over its mesh's CORNER VERTICES (``engine/render/corners.py``,
``shaders/render/gbuffer.vert``): display vertices with a colour per triangle corner, so the interpolated
colour vectors are the barycentrics and the provoking corner passes the triangle index flat (no
gl_PrimitiveID, which sends llvmpipe down a slow path; no expanded draw), triangles in a vertex-cache
friendly strip order; the vertex stage pulls the deformed vertices from SSBOs. The fragment stage writes
albedo and an id texel (mesh id, triangle, barycentrics, normal; ``shaders/include/gbuffer_codec.glsl``) plus
depth, and is kept minimal (it runs for every 4x4 block a small triangle touches): base-colour textures are
stored as sqrt(linear albedo) in RGBA8 UNORM (``meshes.albedo_levels``, llvmpipe's fast 8-bit filtering path,
one mip level per sample), the wireframe coverage only in the wireframe variant. Meshes of one asset share
index buffers, corner vertices, texcoords and texture (one vertex array serves a group), and the pass sets
textures, uniforms and cull state only when they change.
Single-sided meshes (glTF ``doubleSided`` false) cull back faces. Only the depth targets are cleared (see
``engine/render/targets.py``), and only over the screen rectangle the last frame drew (a quad from the previous
rectangle buffer, ``render/rect_clear.vert``; outside it the G-buffer is still cleared from before): the clear
costs what the characters cover, not the frame size. A stale G-buffer (new, resized, a layer change, a frame
that failed) is cleared whole. Draws are submitted (glFlush) every ``flush_triangles`` triangles so a software
rasteriser rasterises while the CPU still runs later meshes' vertex stage; a group's instances are split
there, and only there (a crowd of 32k-triangle characters is one draw per character at the default 8192: on a
software rasteriser the vertex stage and binning, ~0.2 us per triangle on the calling thread, are the cost
either way; on a hardware GPU ``flush_triangles = 0`` keeps a group in one draw). With Phong tessellation
(``look.tessellation``) the meshes draw one by one through ``render/mesh.vert`` + ``phong.tesc/tese`` instead.

The vertex stage also grows the G-buffer's SCREEN RECTANGLE (SSBO, atomics only for vertices outside it):
the pixel bounds of every vertex's projection, the whole view when one lies behind the eye; exact and
conservative, never read back by the CPU. The compose pass draws its quad over it.
"""
from __future__ import annotations

import moderngl

from engine.gpu.layouts import GLSL_CONSTANTS
from engine.gpu.shaderlib import uniform
from engine.render.framegraph import ATTACHMENT, HOST, STORAGE, PassSpec, uses
from engine.render.meshes import DrawGroup, MeshHandle
from engine.render.programs import set_matrix, set_uniform
from engine.render.state import Frame, RenderState
from engine.render.targets import GBuffer

__all__ = ["ResetRects", "GBufferPass", "gbuffer_resource", "rect_resource", "clear_gbuffer",
           "PREVIOUS_RECTS"]

#: a bound corner-draw program: (textured, program, ``u_instances``, ``u_instance_base``, instance rows it holds)
GroupBinding = tuple[bool, moderngl.Program, moderngl.Uniform, moderngl.Uniform, int]

#: the frame-graph name of the last frame's screen rectangles (written before this frame: external)
PREVIOUS_RECTS = "screen_rects.previous"


def gbuffer_resource(layer: str | None) -> str:
    """The frame-graph name of the scene G-buffer (None) or a layer's."""
    return "gbuffer.scene" if layer is None else f"gbuffer.{layer}"


def rect_resource(layer: str | None) -> str:
    """The frame-graph name of the scene G-buffer's (None) or a layer's screen rectangle."""
    return "rect.scene" if layer is None else f"rect.{layer}"


def clear_gbuffer(state: RenderState, gb: GBuffer, slot: int) -> None:
    """zcopy = 0 and depth = 1 over the whole G-buffer: everywhere when it is stale, else over the screen
    rectangle slot ``slot`` of the last frame (where it drew; elsewhere the G-buffer is cleared already)."""
    gb.clear_fbo.use()
    if gb.stale:
        gb.clear_fbo.clear(0.0, 0.0, 0.0, 0.0, depth=1.0)
        gb.stale = False
        return
    ctx = state.ctx
    binding = GLSL_CONSTANTS["BINDING_SCREEN_RECTS"]
    prog = state.programs.program("rect_clear")
    state.targets.previous_rects.bind_to_storage_buffer(binding)
    ctx.enable(moderngl.DEPTH_TEST)
    ctx.depth_func = "1"  # always: the quad at the far plane writes depth 1
    set_uniform(prog, "u_rect_slot", slot)
    set_uniform(prog, "u_viewport", (float(state.width), float(state.height)))
    state.programs.vao(prog, None).render(moderngl.TRIANGLES, vertices=6)
    state.targets.rects.bind_to_storage_buffer(binding)


class ResetRects:
    """Every G-buffer's screen rectangle starts empty (a CPU write before the G-buffer passes); with Phong
    tessellation, whose vertex stage does not grow it, the whole viewport."""

    name = "rects"

    def spec(self, state: RenderState) -> PassSpec:
        return PassSpec(self.name, writes=uses(HOST, "screen_rects"))

    def run(self, state: RenderState, frame: Frame) -> None:
        state.targets.reset_rects(whole=bool(state.look.tessellation))
        state.targets.rects.bind_to_storage_buffer(GLSL_CONSTANTS["BINDING_SCREEN_RECTS"])


class GBufferPass:
    """The G-buffer pass of the scene (``layer`` None, screen-rectangle slot 0) or of one layer (slot =
    its position among the layers + 1)."""

    def __init__(self, layer: str | None, slot: int, *, groups_key: str | None = None) -> None:
        self.layer = layer
        self.slot = slot
        self.name = "gbuffer" if layer is None else f"layer:{layer}"
        #: the registry's cache slot for this pass's material groups (default: the layer's); a second renderer
        #: drawing its own list (the controller camera's) takes its own, so the two do not evict each other
        self.groups_key = layer if groups_key is None else groups_key

    def spec(self, state: RenderState) -> PassSpec:
        return PassSpec(self.name, reads=uses(STORAGE, "vertices", "screen_rects", PREVIOUS_RECTS),
                        writes=(uses(ATTACHMENT, gbuffer_resource(self.layer))
                                + uses(STORAGE, rect_resource(self.layer))),
                        timer=self.name)

    def run(self, state: RenderState, frame: Frame) -> None:
        """Clear (zcopy + depth only, where the last frame drew: :func:`clear_gbuffer`) and draw the meshes
        into the G-buffer: one instanced draw per material group (:meth:`MeshRegistry.draw_groups`), or
        with Phong tessellation one draw per mesh; one program bind per (textured, untextured) variant;
        uniforms, textures and cull state are set only when they change."""
        gb = state.targets.gbuffer(self.layer)
        meshes = frame.lists[self.layer]
        ctx = state.ctx
        clear_gbuffer(state, gb, self.slot)
        if not meshes:
            return
        gb.fbo.use()
        ctx.enable(moderngl.DEPTH_TEST)
        ctx.depth_func = "<"
        material = _MaterialState(ctx)
        try:
            if state.look.tessellation:
                ctx.patch_vertices = 3
                self._draw_meshes(state, meshes, material)
            else:  # the corner draw needs GL's default (last vertex provokes), whatever other code set
                ctx.provoking_vertex = moderngl.LAST_VERTEX_CONVENTION
                self._draw_groups(state, state.meshes.draw_groups(self.groups_key, meshes), material)
        finally:
            material.end()

    def _program(self, state: RenderState, uv: bool) -> moderngl.Program:
        """The G-buffer program variant of the look, its per-frame uniforms set."""
        look = state.look
        prog = state.programs.gbuffer(uv, tess=bool(look.tessellation), wire=bool(look.wireframe))
        vp = state.last_view_proj
        assert vp is not None, "set_camera runs before the passes"
        set_matrix(prog, "u_view_proj", vp)
        set_uniform(prog, "u_rect_slot", self.slot)
        set_uniform(prog, "u_viewport", (float(state.width), float(state.height)))
        if look.tessellation:
            set_uniform(prog, "u_tess_level", float(look.tess_level))
            set_uniform(prog, "u_phong_alpha", float(look.phong_alpha))
        set_uniform(prog, "u_base_texture", 0)
        return prog

    def _draw_groups(self, state: RenderState, groups: list[DrawGroup], material: _MaterialState) -> None:
        """One instanced corner-vertex draw per material group (``render/gbuffer.vert``), split where a
        flush is due (every ``flush_triangles``) and where the instance rows fill the program's array."""
        programs = state.programs
        flush = state.flush
        flush_every = state.flush_triangles if flush is not None else 0
        current: GroupBinding | None = None
        queued = 0
        for g in groups:
            current = self._bind_group(state, g, current, material)
            _, prog, u_rows, u_base, capacity = current
            vao = programs.vao(prog, g.head, corners=True)
            tris = g.triangle_count
            per_flush = max(1, -(-flush_every // tris)) if flush_every else capacity
            count = len(g.meshes)
            for b, block in enumerate(g.row_blocks(capacity)):
                u_rows.write(block)
                first, end = b * capacity, min((b + 1) * capacity, count)
                while first < end:
                    if flush is not None and flush_every and queued >= flush_every:
                        flush()
                        queued = 0
                    k = min(per_flush, end - first)
                    u_base.value = first - b * capacity
                    vao.render(moderngl.TRIANGLES, instances=k)
                    queued += k * tris
                    first += k

    def _bind_group(self, state: RenderState, g: DrawGroup, current: GroupBinding | None,
                    material: _MaterialState) -> GroupBinding:
        """Bind group ``g`` for a corner draw: its program variant when it changes (``current``: the one
        bound), its head's material and its vertex ranges; the binding now current (also the probe's pass)."""
        h = g.head
        uv = h.texcoords is not None
        if current is None or current[0] != uv:
            prog = self._program(state, uv)
            rows = uniform(prog, "u_instances")
            current = (uv, prog, rows, uniform(prog, "u_instance_base"), rows.array_length)
            material.use(prog)
        material.apply(h)
        g.bind_vertices(GLSL_CONSTANTS["BINDING_POSITIONS"], GLSL_CONSTANTS["BINDING_NORMALS"])
        return current

    def _draw_meshes(self, state: RenderState, meshes: list[MeshHandle], material: _MaterialState) -> None:
        """One draw per mesh through Phong tessellation (``render/mesh.vert`` + ``phong.tesc/tese``)."""
        bp, bn = GLSL_CONSTANTS["BINDING_POSITIONS"], GLSL_CONSTANTS["BINDING_NORMALS"]
        bt = GLSL_CONSTANTS["BINDING_TEXCOORDS"]
        programs = state.programs
        current: tuple[bool, moderngl.Program, moderngl.Uniform] | None = None
        last_tc = None
        queued = 0
        flush = state.flush
        flush_every = state.flush_triangles if flush is not None else 0
        for h in meshes:
            if flush is not None and flush_every and queued >= flush_every:
                flush()
                queued = 0
            queued += h.triangle_count
            uv = h.texcoords is not None
            if current is None or current[0] != uv:
                prog = self._program(state, uv)
                current = (uv, prog, uniform(prog, "u_mesh_id"))
                material.use(prog)
            _, prog, u_id = current
            material.apply(h)
            u_id.value = h.id
            if h.texcoords is not None and h.texcoords is not last_tc:
                h.texcoords.bind_to_storage_buffer(bt)
                last_tc = h.texcoords
            h.bind_vertices(bp, bn)
            programs.vao(prog, h).render(moderngl.PATCHES)


class _MaterialState:
    """What the G-buffer pass sets per mesh or group, set only when it changes: back-face culling (single-
    sided meshes), the albedo scale and the base-colour texture of the program in use."""

    def __init__(self, ctx: moderngl.Context) -> None:
        self.ctx = ctx
        self.cull = False
        self.texture: moderngl.Texture | None = None
        self.u_scale: moderngl.Uniform | None = None
        self.u_tex: moderngl.Uniform | None = None
        self.scale: tuple[float, float, float] | None = None
        self.has_tex: bool | None = None

    def use(self, prog: moderngl.Program) -> None:
        """A program was bound: its uniforms are set again at the next :meth:`apply`."""
        self.u_scale = uniform(prog, "u_albedo_scale")
        self.u_tex = uniform(prog, "u_has_texture") if "u_has_texture" in prog else None
        self.scale = self.has_tex = None

    def apply(self, h: MeshHandle) -> None:
        """Cull state, albedo scale and texture of mesh ``h`` (a group's head)."""
        if self.cull != (not h.double_sided):
            self.cull = not h.double_sided
            if self.cull:
                self.ctx.enable(moderngl.CULL_FACE)
            else:
                self.ctx.disable(moderngl.CULL_FACE)
        scale = h.albedo_scale
        if scale != self.scale and self.u_scale is not None:
            self.u_scale.value = scale
            self.scale = scale
        if h.texcoords is None:
            return
        if h.texture is not None and h.texture is not self.texture:
            h.texture.use(location=0)
            self.texture = h.texture
        has_tex = h.texture is not None
        if has_tex != self.has_tex and self.u_tex is not None:
            self.u_tex.value = has_tex
            self.has_tex = has_tex

    def end(self) -> None:
        """Leave back-face culling off, as the other passes expect."""
        if self.cull:
            self.ctx.disable(moderngl.CULL_FACE)
            self.cull = False
