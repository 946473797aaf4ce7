"""The ``backdrop`` pass: background gradient + ground grid into the cached backdrop target.

One fullscreen triangle (``render/fullscreen.vert`` + ``render/backdrop.frag``) writes every pixel's colour,
depth and a depth copy the compositor and the queries read: sky gradient, the ground plane lit by the same
lights as the meshes, its grid fading with distance from the camera target. Redrawn only when the camera, the
lights, the look or the size change (a key of all of them); the compose pass copies it into the frame. Timed in
the ``compose`` scope.
"""
from __future__ import annotations

import moderngl
import numpy as np

from engine.gpu.layouts import GLSL_CONSTANTS
from engine.render.framegraph import ATTACHMENT, UNIFORM, PassSpec, uses
from engine.render.look import linear_rgb
from engine.render.programs import set_matrix, set_uniform
from engine.render.state import Frame, RenderState

__all__ = ["BackdropPass", "backdrop_key"]


def backdrop_key(state: RenderState, frame: Frame) -> tuple:
    """Everything the backdrop's pixels depend on besides its shaders: camera, fade centre, size, lights and
    the look (by value: its repr, 5x cheaper than astuple's deep copy). Equal keys draw equal backdrops."""
    target = np.asarray(getattr(frame.camera, "target", state.eye), np.float64)
    vp = state.last_view_proj
    assert vp is not None, "set_camera runs before the passes"
    return (vp.tobytes(), target.tobytes(), state.width, state.height, state.lights.version, repr(state.look))


class BackdropPass:
    """Draws the backdrop when its key changed since the last draw (:meth:`invalidate` forces one)."""

    name = "backdrop"

    def __init__(self) -> None:
        self._key: tuple | None = None

    def invalidate(self) -> None:
        self._key = None

    def spec(self, state: RenderState) -> PassSpec:
        return PassSpec(self.name, reads=uses(UNIFORM, "lights"), writes=uses(ATTACHMENT, "backdrop"),
                        timer="compose")

    def run(self, state: RenderState, frame: Frame) -> None:
        look = state.look
        key = backdrop_key(state, frame)
        if key == self._key:
            return
        self._key = key
        vp = state.last_view_proj
        assert vp is not None, "set_camera runs before the passes"
        target = np.asarray(getattr(frame.camera, "target", state.eye), np.float64)
        ctx = state.ctx
        prog = state.programs.program("backdrop")
        state.targets.backdrop_fbo.use()
        ctx.enable(moderngl.DEPTH_TEST)
        ctx.depth_func = "1"  # always: the pass writes every pixel's depth itself
        state.lights.buffer.bind_to_uniform_block(GLSL_CONSTANTS["BINDING_LIGHTS"])
        eye = state.eye
        sky, bounce = look.ambient_colors()
        set_matrix(prog, "u_view_proj", vp)
        set_matrix(prog, "u_inv_view_proj", state.inv_view_proj)
        set_uniform(prog, "u_eye", tuple(float(x) for x in eye))
        set_uniform(prog, "u_light_count", state.lights.count)
        set_uniform(prog, "u_exposure", float(look.exposure))
        set_uniform(prog, "u_bg_top", linear_rgb(look.background_top))
        set_uniform(prog, "u_bg_horizon", linear_rgb(look.background_horizon))
        set_uniform(prog, "u_bg_bottom", linear_rgb(look.background_bottom))
        set_uniform(prog, "u_sky_color", sky)
        set_uniform(prog, "u_ground_color", bounce)
        set_uniform(prog, "u_rim_strength", float(look.rim_strength))
        set_uniform(prog, "u_ground", bool(look.ground))
        set_uniform(prog, "u_ground_height", float(look.ground_height))
        set_uniform(prog, "u_ground_albedo", linear_rgb(look.ground_color))
        set_uniform(prog, "u_grid_color", linear_rgb(look.grid_color))
        set_uniform(prog, "u_grid_spacing", tuple(float(x) for x in look.grid_spacing))
        fade: tuple[float, ...]
        if look.fade_range is None:
            d = float(np.linalg.norm(eye - target))
            fade = (max(3.0, 1.5 * d), max(8.0, 4.0 * d))
        else:
            fade = tuple(float(x) for x in look.fade_range)
        set_uniform(prog, "u_fade_center", tuple(float(x) for x in target))
        set_uniform(prog, "u_fade_range", fade)
        state.programs.vao(prog, None).render(moderngl.TRIANGLES, vertices=3)
