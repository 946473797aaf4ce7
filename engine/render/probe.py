"""The controller camera (research 7.5): a second, low-resolution renderer that follows a tracked controller
and reads the surface under the centre of its image, so a stroke can be drawn on skin the headset does not see.

A :class:`ProbeRenderer` shares the scene renderer's base (program variants, mesh registry, lights, look: the
deformed meshes already on the GPU) and owns only its targets: a scene G-buffer of ``size`` x ``size`` pixels
(16 by default, 1 at least). :meth:`ProbeRenderer.centre` runs the ``rects`` and ``gbuffer`` passes of the
frame graph into it with the controller's camera, then reads the id and depth texels of the centre pixel (the
scene renderer's query reader over the probe's targets): (mesh, triangle, barycentric, position, normal), the
same :class:`~engine.render.surface.SurfaceHit` a desktop pick gives. Nothing is composed or lit. Only meshes
of the scene G-buffer are drawn (a layer's meshes, e.g. stroke tubes, are not surfaces to draw on).
"""
from __future__ import annotations

from typing import Any

import numpy as np

from engine.render.camera import perspective
from engine.render.passes.gbuffer import GBufferPass, ResetRects
from engine.render.queries import QueryReader
from engine.render.state import Frame, RenderState
from engine.render.surface import SurfaceHit
from engine.render.targets import FrameTargets

__all__ = ["ProbeCamera", "ProbeRenderer", "DEFAULT_PROBE_SIZE", "centre_ray", "probe_reference"]

DEFAULT_PROBE_SIZE = 16


class ProbeCamera:
    """A camera at a tracked pose (4x4 world matrix, looking along its -Z) with a narrow field of view: the
    centre pixel is the ray along the controller's pointing direction."""

    def __init__(self, pose: np.ndarray, *, fov_y: float = 10.0, near: float = 0.005, far: float = 20.0) -> None:
        self.pose = np.asarray(pose, np.float64)
        self.fov_y, self.near, self.far = float(fov_y), float(near), float(far)
        self.aspect = 1.0

    @property
    def view(self) -> np.ndarray:
        return np.linalg.inv(self.pose).astype(np.float32)

    def projection_for(self, aspect: float) -> np.ndarray:
        return perspective(self.fov_y, aspect, self.near, self.far)

    @property
    def projection(self) -> np.ndarray:
        return self.projection_for(1.0)


def centre_ray(camera: Any, size: int) -> tuple[np.ndarray, np.ndarray]:
    """(origin, unit direction) float64 of the ray through the centre pixel's centre (pixel (size // 2,
    size // 2), row 0 at the top) of a ``size`` x ``size`` probe image."""
    c = size // 2 + 0.5
    ndc = np.array([c / size * 2.0 - 1.0, 1.0 - c / size * 2.0])
    inv = np.linalg.inv(np.asarray(camera.projection_for(1.0), np.float64) @ np.asarray(camera.view, np.float64))
    pts = [inv @ np.array([ndc[0], ndc[1], z, 1.0]) for z in (-1.0, 1.0)]
    a, b = (p[:3] / p[3] for p in pts)
    return a, (b - a) / np.linalg.norm(b - a)


def probe_reference(positions: np.ndarray, triangles: np.ndarray, camera: Any, size: int = DEFAULT_PROBE_SIZE,
                    *, cull_back: bool = True) -> tuple[int, np.ndarray, np.ndarray] | None:
    """The numpy reference of :meth:`ProbeRenderer.centre` for one mesh: the nearest triangle the centre
    pixel's ray meets beyond the near plane (Moller-Trumbore over every triangle; back faces skipped when
    ``cull_back``, as the G-buffer pass culls a single-sided mesh): (triangle, barycentric (3,), world
    position (3,)), or None."""
    o, d = centre_ray(camera, size)
    p = np.asarray(positions, np.float64)
    t3 = np.asarray(triangles, np.int64)
    a, b, c = p[t3[:, 0]], p[t3[:, 1]], p[t3[:, 2]]
    e1, e2 = b - a, c - a
    h = np.cross(d, e2)
    det = np.einsum("ij,ij->i", e1, h)
    ok = det > 1e-12 if cull_back else np.abs(det) > 1e-12
    inv = np.where(ok, 1.0 / np.where(ok, det, 1.0), 0.0)
    s = o - a
    u = np.einsum("ij,ij->i", s, h) * inv
    q = np.cross(s, e1)
    v = (q @ d) * inv
    t = np.einsum("ij,ij->i", e2, q) * inv
    near = float(camera.near) / max(float(-d @ np.asarray(camera.view, np.float64)[2, :3]), 1e-12)
    hit = ok & (u >= 0) & (v >= 0) & (u + v <= 1) & (t > near)
    if not hit.any():
        return None
    k = int(np.flatnonzero(hit)[np.argmin(t[hit])])
    return k, np.array([1.0 - u[k] - v[k], u[k], v[k]]), o + d * t[k]


class ProbeRenderer:
    """A ``size`` x ``size`` G-buffer renderer over ``renderer``'s meshes (see the module docstring);
    :meth:`release` frees its targets (the shared parts stay the scene renderer's)."""

    def __init__(self, renderer: Any, size: int = DEFAULT_PROBE_SIZE) -> None:
        if isinstance(size, bool) or not isinstance(size, int) or not 1 <= size <= 256:
            raise ValueError(f"the controller camera's size must be a whole number of pixels in [1, 256], got {size!r}")
        base: RenderState = renderer.shared_state()
        self.size = size
        self._base = base
        self._targets = FrameTargets(base.res)
        self._targets.resize(size, size)
        self._state = RenderState(base.ctx, base.res, base.programs, base.meshes, self._targets, base.lights,
                                  base.look)
        self._reader = QueryReader(self._state)
        self._passes = (ResetRects(), GBufferPass(None, 0))
        self._released = False

    def render(self, camera: Any, *, entities: Any = None) -> None:
        """Draw the scene G-buffer's meshes from ``camera`` into the probe's G-buffer (only those of
        ``entities`` when given: the character a stroke is drawn on; on a software rasteriser the vertex stage
        over every mesh, not the 16x16 pixels, is the probe's cost)."""
        s = self._state
        s.set_camera(camera)
        meshes = self._base.meshes.draw_lists(tuple(self._base.targets.layers))[None]
        if entities is not None:
            keep = set(entities)
            meshes = [h for h in meshes if h.entity in keep]
        frame = Frame(camera, {None: meshes}, "none")
        for p in self._passes:
            p.run(s, frame)
        s.frame_index += 1

    def centre(self, camera: Any, *, entities: Any = None) -> SurfaceHit | None:
        """Render from ``camera`` (the meshes of ``entities``, default all) and read the surface under the
        centre pixel (None: nothing there)."""
        self.render(camera, entities=entities)
        c = self.size // 2
        return self._reader.query_many([(c, c)], layer="gbuffer")[0]

    def release(self) -> None:
        if self._released:
            return
        self._released = True
        self._reader.release()
        self._targets.release()
