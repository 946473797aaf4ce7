"""The ``ui`` pass: an overlay callback (the demo's UI, a tool's markers) draws into the composed frame.

The callback gets the renderer and draws into ``SceneRenderer.framebuffer`` (the frame colour, RGBA8), which
is bound when it runs; no depth test, whatever blending it sets itself. Without a callback the pass does
nothing (its timer scope still opens).
"""
from __future__ import annotations

from engine.render.framegraph import ATTACHMENT, PassSpec, uses
from engine.render.state import Frame, RenderState

__all__ = ["OverlayPass"]


class OverlayPass:
    name = "ui"

    def spec(self, state: RenderState) -> PassSpec:
        return PassSpec(self.name, reads=uses(ATTACHMENT, "composed"), writes=uses(ATTACHMENT, "frame"),
                        timer="ui")

    def run(self, state: RenderState, frame: Frame) -> None:
        if frame.ui is not None:
            state.targets.overlay.use()
            frame.ui()
