"""The ``shadow`` pass (``shadows="map"`` only): depth of every visible mesh from the key light.

An orthographic camera along the key light (the first light) fits the visible meshes' bounds and the ground
below them. The map is re-rendered every ``look.shadow_interval`` frames, and at once when the set of meshes,
their visibility or the lights change; the compose pass samples it (hardware-filtered taps) and darkens the
ground where the key light is blocked. Draws every mesh with ``render/mesh.vert`` pulling the deformed
vertices from their SSBOs and ``render/shadow.frag``.
"""
from __future__ import annotations

import moderngl
import numpy as np

from engine.gpu.layouts import GLSL_CONSTANTS
from engine.gpu.resources import GpuResources
from engine.render.camera import look_at
from engine.render.framegraph import ATTACHMENT, STORAGE, PassSpec, uses
from engine.render.programs import set_matrix
from engine.render.state import Frame, RenderState

__all__ = ["ShadowPass"]

#: clip space [-1, 1] to texture space [0, 1]
_BIAS = np.array([[0.5, 0, 0, 0.5], [0, 0.5, 0, 0.5], [0, 0, 0.5, 0.5], [0, 0, 0, 1]], np.float32)


def _ortho(half_w: float, half_h: float, near: float, far: float) -> np.ndarray:
    m = np.eye(4)
    m[0, 0], m[1, 1] = 1.0 / half_w, 1.0 / half_h
    m[2, 2] = -2.0 / (far - near)
    m[2, 3] = -(far + near) / (far - near)
    return m


class ShadowPass:
    """The key light's shadow map (a depth texture compared with ``<=``, linear filtering) and when it was
    last rendered; :attr:`matrix` maps world points to its texture space."""

    name = "shadow"

    def __init__(self, resources: GpuResources, size: int) -> None:
        if not 16 <= size <= 8192:
            raise ValueError(f"shadow_size must be in [16, 8192], got {size}")
        self.res = resources
        self.size = size
        self.texture = resources.depth_texture((size, size), label="shadow map")
        self.texture.compare_func = "<="
        self.texture.filter = (moderngl.LINEAR, moderngl.LINEAR)
        self.texture.repeat_x = self.texture.repeat_y = False
        self.fbo = resources.framebuffer([], self.texture, label="shadow fbo")
        self.matrix = np.eye(4, dtype=np.float32)
        self._frame = -10**9
        self._rendered_for: tuple[int, int] | None = None  # (draw lists version, lights version)

    def spec(self, state: RenderState) -> PassSpec:
        return PassSpec(self.name, reads=uses(STORAGE, "vertices"), writes=uses(ATTACHMENT, "shadow_map"),
                        timer="shadow")

    def valid(self, state: RenderState) -> bool:
        """Whether the map shows the current meshes under the current lights."""
        return self._rendered_for == (state.meshes.lists_version, state.lights.version)

    def view_proj(self, state: RenderState) -> np.ndarray | None:
        """The light's view-projection fitting the visible meshes (and the ground), None without bounds."""
        b = state.meshes.scene_bounds()
        if b is None:
            return None
        lo, hi = b
        if state.look.ground:
            lo = lo.copy()
            lo[1] = min(lo[1], state.look.ground_height)
        centre = (lo + hi) / 2
        radius = max(float(np.linalg.norm(hi - lo)) / 2, 1e-3)
        key = state.lights.key_direction
        ldir = key / max(np.linalg.norm(key), 1e-12)
        view = look_at(centre + ldir * radius * 2.0, centre).astype(np.float64)
        proj = _ortho(radius * 1.05, radius * 1.05, radius * 0.5, radius * 3.5)
        return (proj @ view).astype(np.float32)

    def run(self, state: RenderState, frame: Frame) -> None:
        if frame.mode != "map":
            return
        due = state.frame_index - self._frame >= state.look.shadow_interval
        if self.valid(state) and not due:
            return
        shadow_vp = self.view_proj(state)
        if shadow_vp is None:
            return
        ctx = state.ctx
        self.fbo.use()
        self.fbo.clear(depth=1.0)
        ctx.enable(moderngl.DEPTH_TEST)
        ctx.depth_func = "<"
        prog = state.programs.program("shadow")
        set_matrix(prog, "u_view_proj", shadow_vp)
        bp, bn = GLSL_CONSTANTS["BINDING_POSITIONS"], GLSL_CONSTANTS["BINDING_NORMALS"]
        for meshes in frame.lists.values():
            for h in meshes:
                h.bind_vertices(bp, bn)
                state.programs.vao(prog, h).render(moderngl.TRIANGLES)
        self.matrix = _BIAS @ shadow_vp
        self._rendered_for = (state.meshes.lists_version, state.lights.version)
        self._frame = state.frame_index

    def release(self) -> None:
        self.res.release(self.fbo)
        self.res.release(self.texture)
