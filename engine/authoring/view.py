"""Window <-> world for authoring: world points to window pixels, window points unprojected onto a plane, and
pixels to metres at a depth. Window coordinates are pixels, row 0 at the top, pixel centres at +0.5 (as the
G-buffer npz and pointer events); cameras are :class:`engine.render.camera.Camera`-like (``view``,
``projection_for(aspect)``, ``eye``, ``target``, ``fov_y``)."""
from __future__ import annotations

from typing import Any

import numpy as np

from engine.render.camera import Camera

__all__ = ["strokes_camera", "window_points", "unproject_point", "unproject_points", "pixels_to_metres"]

#: clip-space w below which a point counts as behind the camera (or on its plane)
_IN_FRONT_W = 1e-6


def window_points(camera: Any, width: int, height: int, points: np.ndarray) -> np.ndarray:
    """Window pixels (N,2) of world points (N,3), x right and y down from the top-left corner; NaN rows for
    points behind the camera."""
    if width < 1 or height < 1:
        raise ValueError(f"the window must be at least 1x1 pixels, got {width}x{height}")
    p = np.asarray(points, np.float64).reshape(-1, 3)
    m = np.asarray(camera.projection_for(width / height), np.float64) @ np.asarray(camera.view, np.float64)
    clip = np.concatenate([p, np.ones((len(p), 1))], axis=1) @ m.T
    out = np.full((len(p), 2), np.nan)
    front = clip[:, 3] > _IN_FRONT_W
    ndc = clip[front, :2] / clip[front, 3:4]
    out[front, 0] = (ndc[:, 0] + 1.0) * 0.5 * width
    out[front, 1] = (1.0 - ndc[:, 1]) * 0.5 * height
    return out


def unproject_point(x: float, y: float, camera: Any, width: int, height: int, plane: np.ndarray) -> np.ndarray | None:
    """Where the ray through window point (x, y) of ``camera`` meets ``plane`` (a pyrr plane) in front of the
    eye; None when it misses (the point lies behind the camera or the view grazes the plane)."""
    from engine.input.rays import ray_plane_hit, window_ray

    ray = window_ray(x, y, width, height, camera.view, camera.projection_for(width / height))
    return ray_plane_hit(ray, plane)


def unproject_points(points: np.ndarray, camera: Any, width: int, height: int, plane: np.ndarray, *,
                     what: str = "the point", plane_name: str = "the plane") -> np.ndarray:
    """Window points (N,2) unprojected through ``camera`` onto ``plane`` (a pyrr plane): world points (N,3).
    ValueError naming the first point whose ray misses the plane (behind the camera, or grazing it)."""
    pts = np.asarray(points, np.float64).reshape(-1, 2)
    out = np.empty((len(pts), 3))
    for i, (x, y) in enumerate(pts):
        hit = unproject_point(x, y, camera, width, height, plane)
        if hit is None:
            raise ValueError(f"{what} ({x:g}, {y:g}) does not meet {plane_name} (it lies behind the camera or "
                             "the view grazes the plane)")
        out[i] = hit
    return out


def pixels_to_metres(pixels: float, camera: Any, height: int, point: np.ndarray) -> float:
    """A length of ``pixels`` on screen, in metres at the depth of ``point`` (vertical fov, ``height`` rows)."""
    forward = np.asarray(camera.target, np.float64) - np.asarray(camera.eye, np.float64)
    forward /= np.linalg.norm(forward)
    depth = float((np.asarray(point, np.float64) - np.asarray(camera.eye, np.float64)) @ forward)
    if not depth > 0:
        raise ValueError("the skeleton's root is behind the camera: window strokes cannot be placed")
    rect = getattr(camera, "view_rect", None)  # the camera's image fills that part of the frame's rows
    rows = height * (float(rect[3]) if rect is not None else 1.0)
    return float(pixels) * 2.0 * depth * np.tan(np.radians(camera.fov_y) / 2.0) / rows


def strokes_camera(spec: Any, lo: np.ndarray, hi: np.ndarray) -> Any:
    """The camera of a strokes file (engine.input.strokefile.CameraSpec) with near/far fitted to the bounds
    [``lo``, ``hi``] of what it looks at (depth precision)."""
    centre = (lo + hi) / 2
    radius = max(float(np.linalg.norm(hi - lo)) / 2, 1e-3)
    dist = float(np.linalg.norm(spec.eye - centre))
    near = max(1e-3, 0.5 * (dist - radius)) if dist > 2 * radius else max(1e-3, 0.01 * radius)
    return Camera.from_spec(spec, near=near, far=max(near * 10, 3.0 * (dist + radius)))
