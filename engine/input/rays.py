"""Window points to world rays, and the ray tests the editor's tools use (posing plane, bounding boxes).

Rays, planes and boxes are pyrr's (``pyrr.ray``: rows origin and unit direction; ``pyrr.plane``: normal and
distance; ``pyrr.aabb``: rows min and max) so tools can use its geometric tests. The convention boundary is here
and only here: the engine's matrices are column-vector (``clip = projection @ view @ world``), pyrr's are
row-vector (``p @ M``): :func:`to_pyrr_matrix` / :func:`from_pyrr_matrix` convert (a transpose); the functions
below take the engine's matrices. Not for hot loops: the per-vertex paths stay batched numpy.

Window coordinates are pixels with row 0 at the top (as the G-buffer npz and pointer events).
"""
from __future__ import annotations

import numpy as np
from pyrr import aabb, geometric_tests, plane, ray

__all__ = ["to_pyrr_matrix", "from_pyrr_matrix", "window_ray", "ray_plane_hit", "ray_box_hit", "facing_plane"]


def to_pyrr_matrix(m: np.ndarray) -> np.ndarray:
    """An engine (column-vector) 4x4 matrix as pyrr's row-vector matrix."""
    return np.asarray(m, np.float64).T.copy()


def from_pyrr_matrix(m: np.ndarray) -> np.ndarray:
    """A pyrr (row-vector) 4x4 matrix as the engine's column-vector float32 matrix."""
    return np.asarray(m, np.float64).T.astype(np.float32)


def window_ray(x: float, y: float, width: int, height: int, view: np.ndarray, projection: np.ndarray) -> np.ndarray:
    """The world ray through window point (x, y) (pixels, row 0 at the top; pixel centres at +0.5): a pyrr ray
    (2, 3) float64 from the near plane, unit direction."""
    if not (width > 0 and height > 0):
        raise ValueError(f"the window must have a positive size, got {width}x{height}")
    if not (np.isfinite(x) and np.isfinite(y)):
        raise ValueError(f"window point must be finite, got ({x!r}, {y!r})")
    ndc_x = 2.0 * float(x) / width - 1.0
    ndc_y = 1.0 - 2.0 * float(y) / height
    inv = np.linalg.inv(np.asarray(projection, np.float64) @ np.asarray(view, np.float64))
    ends = inv @ np.array([[ndc_x, ndc_y, -1.0, 1.0], [ndc_x, ndc_y, 1.0, 1.0]]).T
    near, far = (ends[:3] / ends[3]).T
    return ray.create(near, (far - near) / np.linalg.norm(far - near), dtype=np.float64)


def ray_plane_hit(r: np.ndarray, pl: np.ndarray) -> np.ndarray | None:
    """Where ray ``r`` meets plane ``pl`` in front of its origin (None: parallel or behind)."""
    hit = geometric_tests.ray_intersect_plane(r, pl)
    if hit is None or float(np.dot(hit - r[0], r[1])) < 0.0:
        return None
    return np.asarray(hit, np.float64)


def ray_box_hit(r: np.ndarray, lo: np.ndarray, hi: np.ndarray) -> np.ndarray | None:
    """The first point of box [lo, hi] along ray ``r`` (None: missed)."""
    box = aabb.create_from_bounds(np.asarray(lo, np.float64), np.asarray(hi, np.float64))
    hit = geometric_tests.ray_intersect_aabb(r, box)
    return None if hit is None else np.asarray(hit, np.float64)


def facing_plane(point: np.ndarray, eye: np.ndarray) -> np.ndarray:
    """A pyrr plane through ``point`` facing the camera at ``eye`` (its normal towards the eye)."""
    n = np.asarray(eye, np.float64) - np.asarray(point, np.float64)
    length = np.linalg.norm(n)
    if not length > 1e-12:
        raise ValueError("the camera eye lies on the plane's point: no facing direction")
    return plane.create_from_position(np.asarray(point, np.float64), n / length, dtype=np.float64)
