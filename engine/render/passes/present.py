"""The ``present`` pass: the finished frame copied to a target framebuffer (the window's) when one is given.

One fullscreen triangle (``render/fullscreen.vert`` + ``render/present.frag``) samples the frame colour; the
offscreen frame stays what ``read_pixels`` and the queries read.
"""
from __future__ import annotations

import moderngl

from engine.render.framegraph import ATTACHMENT, SAMPLED, PassSpec, uses
from engine.render.programs import set_uniform
from engine.render.state import Frame, RenderState

__all__ = ["PresentPass"]


class PresentPass:
    name = "present"

    def spec(self, state: RenderState) -> PassSpec:
        return PassSpec(self.name, reads=uses(SAMPLED, "frame"), writes=uses(ATTACHMENT, "target"),
                        timer="present")

    def run(self, state: RenderState, frame: Frame) -> None:
        if frame.target is None:
            return
        state.ctx.disable(moderngl.DEPTH_TEST)
        frame.target.use()
        prog = state.programs.program("present")
        state.targets.color.use(location=0)
        set_uniform(prog, "u_frame", 0)
        state.programs.vao(prog, None).render(moderngl.TRIANGLES, vertices=3)
