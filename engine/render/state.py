"""What the renderer's parts share: the GPU owners, the look, and the camera of the last frame.

:class:`RenderState` is the one object the passes (``engine/render/passes/``), the queries
(``engine/render/queries.py``) and the :class:`~engine.render.renderer.SceneRenderer` facade hold in common;
each part owns its own GPU objects and logic, and reads the others' through it. :class:`Frame` is one
frame's inputs, handed to every pass.
"""
from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

import moderngl
import numpy as np

from engine.gpu.layouts import SILHOUETTE_THRESHOLDS
from engine.gpu.resources import GpuResources
from engine.render.look import Lights, LookSettings
from engine.render.meshes import MeshHandle, MeshRegistry
from engine.render.programs import ProgramVariants, gl_flush_function
from engine.render.targets import FrameTargets

__all__ = ["RenderState", "Frame"]


@dataclass
class Frame:
    """One frame's inputs: the camera (``view``, ``projection_for(aspect)``, optional ``target``), the draw
    lists (visible meshes per G-buffer: None = scene, then layers), the validated shadow mode, the overlay
    callback and the framebuffer to present to (None: none)."""

    camera: Any
    lists: dict[str | None, list[MeshHandle]]
    mode: str
    ui: Callable[[], None] | None = None
    target: moderngl.Framebuffer | None = None


class RenderState:
    """The renderer's shared state (see the module docstring). Camera fields are those of the last
    :meth:`set_camera` (the last rendered frame: queries unproject with them)."""

    def __init__(self, ctx: moderngl.Context, resources: GpuResources, programs: ProgramVariants,
                 meshes: MeshRegistry, targets: FrameTargets, lights: Lights, look: LookSettings) -> None:
        self.ctx = ctx
        self.res = resources
        self.programs = programs
        self.meshes = meshes
        self.targets = targets
        self.lights = lights
        self.look = look
        self.view = "color"  # the channel the compose pass shows (look.VIEWS)
        #: the "silhouette" view's filter: (channel, threshold) (engine/render/silhouette.py)
        self.silhouette_view: tuple[str, float] = ("normal", SILHOUETTE_THRESHOLDS["normal"])
        self.frame_index = 0
        self.last_view_proj: np.ndarray | None = None
        self.last_view: np.ndarray | None = None
        self.last_projection: np.ndarray | None = None
        self.inv_view_proj: np.ndarray = np.eye(4)
        self.eye: np.ndarray = np.zeros(3)
        self.flush = gl_flush_function(ctx)
        self.flush_triangles = 8192
        """The G-buffer pass submits its draws (glFlush) every time about this many triangles have been
        queued, so that a software rasteriser (llvmpipe bins a whole batch before its threads rasterise it)
        rasterises one batch while the CPU still runs the next meshes' vertex stage; 0 = never."""

    @property
    def width(self) -> int:
        return self.targets.width

    @property
    def height(self) -> int:
        return self.targets.height

    def set_camera(self, camera) -> None:
        """Take the frame's matrices from ``camera`` at the targets' aspect ratio."""
        view = np.asarray(camera.view, np.float64)
        proj = np.asarray(camera.projection_for(self.width / self.height), np.float64)
        vp = proj @ view
        self.last_view, self.last_projection = view.astype(np.float32), proj.astype(np.float32)
        self.last_view_proj = vp.astype(np.float32)
        self.inv_view_proj = np.linalg.inv(vp)
        self.eye = np.linalg.inv(view)[:3, 3]

    def frame_ids_needed(self) -> bool:
        """Whether the compositor writes the frame-level id and depth targets: with layers (nearest of
        several G-buffers) and for the shadow-map ground pass; otherwise the scene G-buffer, tested
        against the backdrop depth, is the scene-level id buffer (``queries.QueryReader.region_reads``)."""
        return bool(self.targets.layers) or self.look.shadow_mode() == "map"
