"""The renderer's passes, one module each, declared as data (``engine/render/framegraph.py`` plans them).

One frame, in the order the planner derives from what each pass reads and writes (the timer scope of
``SceneRenderer.gpu_ms`` in brackets):

``rects``       (untimed) the G-buffers' screen rectangles start empty (the last frame's are kept: the
                G-buffer passes clear only there): :mod:`.gbuffer`.
``shadow``      [shadow] ``shadows="map"`` only: depth of every mesh from the key light: :mod:`.shadow`.
``gbuffer``     [gbuffer] every mesh without a layer into the scene G-buffer: :mod:`.gbuffer`.
``layer:NAME``  [layer:NAME] the meshes of layer NAME into that layer's own G-buffer: :mod:`.gbuffer`.
``backdrop``    [compose] background gradient + ground grid, redrawn only when they change: :mod:`.backdrop`.
``compose``     [compose] per G-buffer one early-depth-tested quad: nearest surface wins, lit or a debug
                view, composited with the backdrop; contact-shadow blobs and the shadow-map ground
                darkening: :mod:`.compose`.
``ui``          [ui] the overlay callback draws into the frame: :mod:`.overlay`.
``present``     [present] the frame copied to a target framebuffer (the window): :mod:`.present`.

Every pass is an object with ``name``, ``spec(state) -> PassSpec`` (its declaration, which may depend on the
renderer's settings: the compositor reads the G-buffers through image loads without layers, through
samplers with them) and ``run(state, frame)``. A pass always runs (its timer scope always opens, so
``gpu_ms`` keeps its keys); it returns at once when it has nothing to do this frame.
"""
from __future__ import annotations

from typing import Protocol

from engine.render.framegraph import PassSpec
from engine.render.state import Frame, RenderState

__all__ = ["RenderPass", "PASSES"]

PASSES = ("shadow", "gbuffer", "compose", "ui", "present")
"""The fixed timer scopes (``SceneRenderer.gpu_ms`` keys); each layer adds ``layer:NAME``."""


class RenderPass(Protocol):
    """What the renderer's frame runs: a named pass with its declaration."""

    name: str

    def spec(self, state: RenderState) -> PassSpec: ...

    def run(self, state: RenderState, frame: Frame) -> None: ...
