"""Vertex marks: sets of a mesh's vertices drawn as coloured points over the frame (regions of interest).

A surface edit's region (engine/skinning/roi.py) is three vertex sets, shown as in the research (Fig. 34):
kinematic green, passive blue, static red; each mark an opaque rim around a translucent disc, so the bulge the
region describes stays visible under it. :class:`VertexMarks` draws them in the renderer's ``ui`` pass, pulling
each vertex from the mesh's DEFORMED positions buffer on the GPU (the range the G-buffer pass reads), so the marks
follow the animation and the deformers with no read-back; a mark is hidden where the drawn surface lies in front
of it (the frame depth target). Indices are glTF display vertices of the mesh.

Use: ``marks = VertexMarks(renderer, mesh_id, {"kinematic": k, "passive": p, "static": s}); marks.attach(view)``;
``marks.release()`` when done. ``Character.show_region`` (engine/session.py) does this for a character.
"""
from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

import numpy as np

from engine.gpu.layouts import GLSL_CONSTANTS
from engine.render.programs import set_matrix, set_uniform

__all__ = ["VertexMarks", "SET_COLORS", "SET_ORDER"]

#: the region sets in draw order and their colours (linear RGBA), as the research shows them
SET_ORDER = ("static", "passive", "kinematic")
SET_COLORS: dict[str, tuple[float, float, float, float]] = {
    "kinematic": (0.1, 0.85, 0.2, 1.0),
    "passive": (0.15, 0.35, 1.0, 1.0),
    "static": (0.95, 0.15, 0.1, 1.0),
}


class VertexMarks:
    """Points over the frame at some vertices of one renderer mesh, coloured per named set."""

    def __init__(self, renderer: Any, mesh_id: int, sets: Mapping[str, Sequence[int] | np.ndarray], *,
                 point_size: float = 6.0) -> None:
        handle = renderer.meshes.get(mesh_id)
        if handle is None:
            raise ValueError(f"no renderer mesh {mesh_id!r}; live meshes: {sorted(renderer.meshes)}")
        unknown = sorted(set(sets) - set(SET_ORDER))
        if unknown:
            raise ValueError(f"unknown vertex set(s) {unknown}; valid: {', '.join(SET_ORDER)}")
        if not (np.isfinite(point_size) and 1.0 <= point_size <= 64.0):
            raise ValueError(f"point_size must be in [1, 64] pixels, got {point_size!r}")
        rows = []
        for k, name in enumerate(SET_ORDER):
            idx = np.asarray(sets.get(name, ()), np.int64).reshape(-1)
            if idx.size and (idx.min() < 0 or idx.max() >= handle.vertex_count):
                raise ValueError(f"{name} holds vertex {int(idx.min() if idx.min() < 0 else idx.max())}; "
                                 f"valid: [0, {handle.vertex_count - 1}] (mesh {mesh_id})")
            rows.append(np.stack([idx, np.full(idx.shape, k)], 1))
        marks = np.concatenate(rows).astype(np.int32) if rows else np.zeros((0, 2), np.int32)
        self.renderer = renderer
        self.mesh_id = int(mesh_id)
        self.count = int(marks.shape[0])
        self.point_size = float(point_size)
        self._res = renderer.res
        self._buffer = self._res.buffer(marks if marks.size else np.zeros((1, 2), np.int32),
                                        label=f"vertex marks of mesh {mesh_id}")
        self._program = renderer.programs.get_program(
            vertex="render/marks.vert", fragment="render/marks.frag",
            defines={k: GLSL_CONSTANTS[k] for k in ("BINDING_POSITIONS", "BINDING_MARKS")})
        self._vao = renderer.ctx.vertex_array(self._program, [])
        self._views: list[Any] = []

    def attach(self, view: Any) -> VertexMarks:
        """Draw the marks in ``view``'s ui pass every frame (engine.frame.View)."""
        if self.draw not in view.ui:
            view.ui.append(self.draw)
            self._views.append(view)
        return self

    def draw(self, renderer: Any) -> None:
        """The overlay callback: points at the marked vertices of the mesh's current deformed positions."""
        import moderngl

        handle = renderer.meshes.get(self.mesh_id)
        vp = renderer.last_view_proj
        if handle is None or vp is None or not self.count or not handle.visible:
            return
        ctx = renderer.ctx
        prog = self._program
        set_matrix(prog, "u_view_proj", vp)
        set_uniform(prog, "u_point_size", self.point_size)
        set_uniform(prog, "u_depth_bias", 2e-4)
        set_uniform(prog, "u_frame_depth", 0)
        if "u_colors" in prog:
            prog["u_colors"].write(np.array([SET_COLORS[n] for n in SET_ORDER] + [(1, 1, 1, 1)], np.float32))
        renderer.frame_depth.use(location=0)
        handle.bind_vertices(GLSL_CONSTANTS["BINDING_POSITIONS"], GLSL_CONSTANTS["BINDING_NORMALS"])
        self._buffer.bind_to_storage_buffer(GLSL_CONSTANTS["BINDING_MARKS"])
        ctx.enable(moderngl.PROGRAM_POINT_SIZE)
        ctx.disable(moderngl.DEPTH_TEST)
        ctx.enable(moderngl.BLEND)  # the discs are translucent (marks.frag)
        ctx.blend_func = moderngl.SRC_ALPHA, moderngl.ONE_MINUS_SRC_ALPHA
        self._vao.render(moderngl.POINTS, vertices=self.count)
        ctx.disable(moderngl.BLEND)
        ctx.disable(moderngl.PROGRAM_POINT_SIZE)

    def release(self) -> None:
        """Stop drawing and free the GPU objects. Idempotent."""
        for view in self._views:
            if self.draw in view.ui:
                view.ui.remove(self.draw)
        self._views = []
        if self._buffer is not None:
            self._res.release(self._buffer)
            self._vao.release()
            self._buffer = None
