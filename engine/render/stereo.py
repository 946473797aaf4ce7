"""Stereo targets and eye cameras for a VR headset (research 7.5): one RGBA8 texture per eye, filled from the
scene renderer's frame after each eye's pass, and a camera made of explicit view and projection matrices.

The stereo frame renders the G-buffer and composes TWICE, once per eye, into the renderer's frame (sized to
one eye), and copies each finished frame into its eye texture (a GPU copy, no read-back): what an OpenVR
``submit`` takes, and what the mirror window and ``--screenshot`` read. Instanced stereo (one G-buffer pass
drawing both eyes into a double-wide target) would save the per-eye vertex work; two passes keep every
renderer pass, query and timer unchanged (the per-eye costs are measured by ``bench vr``).
"""
from __future__ import annotations

from typing import Any

import numpy as np

__all__ = ["EyeCamera", "StereoTargets"]


class EyeCamera:
    """A camera with explicit ``view`` and ``projection`` matrices (float32, column vectors), e.g. a
    headset eye's; the projection does not depend on the image's aspect (the headset fixes it)."""

    def __init__(self, view: np.ndarray, projection: np.ndarray) -> None:
        self.view_matrix = np.asarray(view, np.float32)
        self.projection = np.asarray(projection, np.float32)
        self.aspect = 1.0
        inv = np.linalg.inv(self.view_matrix.astype(np.float64))
        self.eye = inv[:3, 3].copy()
        self.target = self.eye - inv[:3, 2]  # looks along its -Z
        self.up = inv[:3, 1].copy()
        p = self.projection.astype(np.float64)
        self.near = float(p[2, 3] / (p[2, 2] - 1.0))
        self.far = float(p[2, 3] / (p[2, 2] + 1.0))
        self.fov_y = float(np.degrees(2.0 * np.arctan(1.0 / p[1, 1])))

    @property
    def view(self) -> np.ndarray:
        return self.view_matrix

    @property
    def eye_position(self) -> np.ndarray:
        return self.eye.astype(np.float32)

    def projection_for(self, aspect: float) -> np.ndarray:
        return self.projection


class StereoTargets:
    """Two RGBA8 eye textures of ``width`` x ``height`` (index 0 left), created once, released by
    :meth:`release`."""

    def __init__(self, resources: Any, width: int, height: int) -> None:
        self.res = resources
        self.width, self.height = int(width), int(height)
        self.textures = [resources.texture((self.width, self.height), 4, label=f"eye {k}") for k in ("left", "right")]
        self.fbos = [resources.framebuffer([t], label=f"eye fbo {k}") for t, k in zip(self.textures, ("left", "right"))]
        self._released = False

    def capture(self, eye: int, renderer: Any) -> None:
        """Copy the renderer's finished frame (its size must be the eyes') into eye ``eye``'s texture."""
        if (renderer.width, renderer.height) != (self.width, self.height):
            raise ValueError(f"the renderer is {renderer.width}x{renderer.height}, the eyes {self.width}x{self.height}")
        self.res.ctx.copy_framebuffer(self.fbos[eye], renderer.framebuffer)

    def read(self, eye: int) -> np.ndarray:
        """Eye ``eye``'s image (H, W, 4) uint8, row 0 at the top."""
        raw = self.fbos[eye].read(components=4, alignment=1)
        return np.frombuffer(raw, np.uint8).reshape(self.height, self.width, 4)[::-1].copy()

    def side_by_side(self) -> np.ndarray:
        """Both eyes side by side (left | right): (H, 2W, 4) uint8."""
        return np.concatenate([self.read(0), self.read(1)], axis=1)

    def release(self) -> None:
        if self._released:
            return
        self._released = True
        for obj in (*self.fbos, *self.textures):
            self.res.release(obj)

