"""The renderer's program variants and vertex arrays, over the shader library's program cache.

Every program the passes draw with is named here with the defines it takes (``shaders/render/*``; the
cache keys programs by (stages, defines), STYLE.md habit 6): the fixed ones in :data:`STAGES`, the
G-buffer variants (texcoords x wireframe x Phong tessellation) and the compose variants (light count,
frame ids, layer count or image loads, debug view, shadow taps). :meth:`ProgramVariants.vao` keeps one
vertex array per (program, mesh) until the mesh goes or a shader reload swaps programs. Also the small
uniform helpers and ``glFlush`` (moderngl exposes none) the passes use.
"""
from __future__ import annotations

from collections.abc import Callable
from typing import TYPE_CHECKING, Any

import moderngl
import numpy as np

from engine.gpu.glfunc import gl_function
from engine.gpu.layouts import GLSL_CONSTANTS, SILHOUETTE_DEFINES, pack_mat4
from engine.gpu.resources import GpuResources
from engine.gpu.shaderlib import ProgramCache, uniform
from engine.render.look import VIEWS

if TYPE_CHECKING:
    from engine.render.meshes import MeshHandle

__all__ = ["ProgramVariants", "STAGES", "gl_flush_function", "set_uniform", "set_matrix"]

_MESH_DEFINES = ("BINDING_POSITIONS", "BINDING_NORMALS", "BINDING_TEXCOORDS")
_CORNER_DEFINES = ("CORNER_TRIANGLE_SHIFT", "BINDING_SCREEN_RECTS")
_COMPOSE_IMAGES = ("IMAGE_GBUFFER_ZCOPY", "IMAGE_GBUFFER_ALBEDO", "IMAGE_GBUFFER_IDS", "IMAGE_BACKDROP_DEPTH")
_LIGHT_DEFINES = ("BINDING_LIGHTS", "MAX_LIGHTS")


def _constants(*names: str) -> dict[str, int]:
    return {n: GLSL_CONSTANTS[n] for n in names}


#: the fixed programs: name -> the stages and defines of ProgramCache.get_program
STAGES: dict[str, dict[str, Any]] = {
    "backdrop": dict(vertex="render/fullscreen.vert", fragment="render/backdrop.frag",
                     defines=_constants(*_LIGHT_DEFINES)),
    "present": dict(vertex="render/fullscreen.vert", fragment="render/present.frag"),
    "shadow": dict(vertex="render/mesh.vert", fragment="render/shadow.frag", defines=_constants(*_MESH_DEFINES)),
    "blob": dict(vertex="render/blob.vert", fragment="render/blob.frag", defines=_constants("BINDING_BLOBS")),
    "ground_shadow": dict(vertex="render/fullscreen.vert", fragment="render/ground_shadow.frag"),
    "rect_clear": dict(vertex="render/rect_clear.vert", fragment="render/rect_clear.frag",
                       defines=_constants("BINDING_SCREEN_RECTS")),
}


def set_matrix(prog: moderngl.Program | moderngl.ComputeShader, name: str, m: np.ndarray) -> None:
    """Write a 4x4 column-vector matrix to a ``mat4`` uniform (transposed for GLSL), if the program has it."""
    if name in prog:
        uniform(prog, name).write(pack_mat4(m).tobytes())


def set_uniform(prog: moderngl.Program | moderngl.ComputeShader, name: str, value) -> None:
    """Set a uniform if the program has it (the compiler drops unused ones)."""
    if name in prog:
        uniform(prog, name).value = value


def gl_flush_function(ctx: moderngl.Context) -> Callable[[], None] | None:
    """``glFlush`` of the context's own GL loader (moderngl exposes no flush), or None where the loader
    does not provide it. A flush only submits the queued commands; nothing waits."""
    return gl_function(ctx, "glFlush")


class ProgramVariants:
    """The renderer's programs (from a :class:`ProgramCache`) and the vertex arrays bound to them."""

    def __init__(self, resources: GpuResources, programs: ProgramCache | None = None) -> None:
        self.res = resources
        self.owns_cache = programs is None
        self.cache = programs if programs is not None else ProgramCache(resources)
        self._vaos: dict[tuple, moderngl.VertexArray] = {}
        self._generation = self.cache.generation
        #: ids of the programs whose constant uniforms a pass has set already (cleared on reload)
        self.initialised: set[int] = set()

    def program(self, name: str) -> moderngl.Program:
        """One of the fixed programs of :data:`STAGES`."""
        return self.cache.get_program(**STAGES[name])

    def gbuffer(self, uv: bool, *, tess: bool, wire: bool) -> moderngl.Program:
        """The G-buffer program: corner-vertex draw (``render/gbuffer.vert``) or, with ``tess``, Phong
        tessellation over the plain vertex pull; with texcoords, with the wireframe coverage."""
        defines = _constants(*_MESH_DEFINES)
        if uv:
            defines["HAS_TEXCOORDS"] = 1
        if wire:
            defines["WIREFRAME"] = 1
        if tess:
            defines["TESSELLATION"] = 1
            return self.cache.get_program(vertex="render/mesh.vert", tess_control="render/phong.tesc",
                                          tess_evaluation="render/phong.tese", fragment="render/gbuffer.frag",
                                          defines=defines)
        defines.update(_constants(*_CORNER_DEFINES))
        defines["CORNERS"] = 1
        defines["SCREEN_RECT"] = 1
        return self.cache.get_program(vertex="render/gbuffer.vert", fragment="render/gbuffer.frag",
                                      defines=defines)

    def compose(self, *, light_count: int, frame_ids: bool, layers: int, view: int,
                shadow_taps: int | None) -> moderngl.Program:
        """The compose program: ``layers`` > 0 samples 1 + layers G-buffers, 0 reads the scene G-buffer
        through image loads; ``frame_ids`` also writes the frame id and depth targets; ``view`` the index
        of the debug view (0 = lit); ``shadow_taps`` for the shadow-map variant of the lit view."""
        defines = _constants(*_LIGHT_DEFINES, "BINDING_SCREEN_RECTS")
        defines["LIGHT_COUNT"] = light_count
        if frame_ids:
            defines["FRAME_IDS"] = 1
        if layers:
            defines["LAYER_COUNT"] = layers
        else:
            defines.update(_constants(*_COMPOSE_IMAGES))
        if view:
            defines["VIEW"] = view
            if view == VIEWS.index("silhouette"):  # the filter's channel codes (engine/gpu/layouts.py)
                defines.update(SILHOUETTE_DEFINES)
        elif shadow_taps is not None:
            defines["SHADOW_TAPS"] = int(shadow_taps)
        return self.cache.get_program(vertex="render/compose.vert", fragment="render/compose.frag",
                                      defines=defines)

    def vao(self, prog: moderngl.Program, h: MeshHandle | None, *, corners: bool = False) -> moderngl.VertexArray:
        """The vertex array of ``prog`` for mesh ``h`` (or the attribute-less fullscreen one), made
        once per (program, mesh) and kept until the mesh goes or a shader reload swaps programs. Its
        index buffer is the mesh's triangles, or with ``corners`` the triangles over its corner vertices
        (the G-buffer draw, see gbuffer.vert: the corner vertices' static data, info word and texcoords,
        are vertex attributes); the vertex stages pull the deformed vertices from SSBOs themselves."""
        key = (id(prog), None if h is None else h.id)
        vao = self._vaos.get(key)
        if vao is None:
            label = "fullscreen" if h is None else f"{h.label}"
            index = None if h is None else (h.corner_indices if corners else h.indices)
            content = []
            if corners:  # static per-corner data as vertex attributes (see gbuffer.vert)
                assert h is not None, "the corner attributes are a mesh's"
                content.append((h.corners, "2u", "in_corner"))
                if "in_uv" in prog:
                    content.append((h.corner_texcoords, "2f", "in_uv"))
            vao = self.res.vertex_array(prog, content, index_buffer=index, label=f"{label} vao")
            self._vaos[key] = vao
        return vao

    def drop_mesh(self, mesh_id: int) -> None:
        """Release the vertex arrays of a mesh that goes."""
        for key in [k for k in self._vaos if k[1] == mesh_id]:
            self.res.release(self._vaos.pop(key))

    def refresh_after_reload(self) -> bool:
        """Vertex arrays are bound to a program: drop them after the cache swapped programs. True when
        it did (callers drop what they cached per program)."""
        if self._generation == self.cache.generation:
            return False
        self._release_vaos()
        self.initialised.clear()
        self._generation = self.cache.generation
        return True

    def _release_vaos(self) -> None:
        for vao in self._vaos.values():
            self.res.release(vao)
        self._vaos.clear()

    def release(self) -> None:
        """Release the vertex arrays, and the cache's programs when the cache was made here."""
        self._release_vaos()
        if self.owns_cache:
            self.cache.release()
