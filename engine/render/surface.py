"""Surface queries on the G-buffer, decoded with numpy: ids, barycentrics, normals, world positions.

The mesh pass writes, per pixel, an RGBA32UI id texel (``shaders/include/gbuffer_codec.glsl`` is the
GLSL side of the same layout) and the hardware depth:

* ``x`` = mesh id + 1 (0: no surface), ``y`` = triangle index in the mesh's index buffer,
* ``z`` = ``packUnorm2x16(b1, b2)`` (``b0 = 1 - b1 - b2``), ``w`` = ``packSnorm2x16`` of the octahedral
  encoding of the unit normal (facing the camera).

World positions are not stored: they are reconstructed from the window depth and the inverse
view-projection (:func:`unproject`), exact to the depth buffer's precision. A pixel's (mesh, triangle,
barycentrics) names a point of the surface that does not depend on the pose, kept as a
:class:`~engine.input.picking.SurfacePoint` (plain data keyed by the mesh id; defined in engine.input, re-exported
here) and re-evaluated on the current deformed vertices (:func:`interpolate_surface`), so strokes drawn on the
skin stay on it while the character moves (research section 7.4). :class:`SurfaceHit` is what a renderer query
returns: the point plus the renderer's mesh handle, position, normal and depth.
"""
from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING

import numpy as np

from engine.input.picking import SurfacePoint

if TYPE_CHECKING:
    from engine.render.meshes import MeshHandle

__all__ = ["SurfaceHit", "SurfacePoint", "decode_ids", "oct_decode", "oct_encode", "unproject",
           "interpolate_surface", "pixel_of"]


def oct_encode(n: np.ndarray) -> np.ndarray:
    """Octahedral encoding (..., 3) unit vectors -> (..., 2) in [-1, 1] (the inverse of :func:`oct_decode`)."""
    n = np.asarray(n, np.float64)
    s = np.abs(n).sum(axis=-1, keepdims=True)
    p = n / np.where(s > 0, s, 1.0)
    xy = p[..., :2]
    sign = np.where(xy >= 0, 1.0, -1.0)
    wrapped = (1.0 - np.abs(xy[..., ::-1])) * sign
    return np.where(p[..., 2:3] >= 0, xy, wrapped)


def oct_decode(e: np.ndarray) -> np.ndarray:
    """(..., 2) octahedral codes -> (..., 3) unit vectors (float32)."""
    e = np.asarray(e, np.float64)
    z = 1.0 - np.abs(e[..., 0]) - np.abs(e[..., 1])
    t = np.maximum(-z, 0.0)
    x = e[..., 0] + np.where(e[..., 0] >= 0, -t, t)
    y = e[..., 1] + np.where(e[..., 1] >= 0, -t, t)
    v = np.stack([x, y, z], axis=-1)
    return (v / np.linalg.norm(v, axis=-1, keepdims=True)).astype(np.float32)


def decode_ids(ids: np.ndarray) -> dict[str, np.ndarray]:
    """Decode (..., 4) uint32 id texels: ``mesh`` (int32 mesh id, -1 for none), ``triangle`` (int32,
    -1 for none), ``barycentric`` (..., 3) float32 and ``normal`` (..., 3) float32 (zeros where none)."""
    ids = np.asarray(ids, np.uint32)
    if ids.shape[-1] != 4:
        raise ValueError(f"id texels must have 4 components, got shape {ids.shape}")
    hit = ids[..., 0] > 0
    mesh = np.where(hit, ids[..., 0].astype(np.int64) - 1, -1).astype(np.int32)
    tri = np.where(hit, ids[..., 1].astype(np.int64), -1).astype(np.int32)
    z = ids[..., 2]
    b1 = (z & 0xFFFF).astype(np.float32) / 65535.0
    b2 = (z >> 16).astype(np.float32) / 65535.0
    bary = np.stack([1.0 - b1 - b2, b1, b2], axis=-1).astype(np.float32)
    w = ids[..., 3]
    sx = (w & 0xFFFF).astype(np.uint16).view(np.int16).astype(np.float64)
    sy = (w >> 16).astype(np.uint16).view(np.int16).astype(np.float64)
    enc = np.clip(np.stack([sx, sy], axis=-1) / 32767.0, -1.0, 1.0)
    normal = oct_decode(enc)
    bary[~hit] = 0.0
    normal[~hit] = 0.0
    return {"mesh": mesh, "triangle": tri, "barycentric": bary, "normal": normal}


def unproject(inv_view_proj: np.ndarray, px: np.ndarray, py: np.ndarray, depth: np.ndarray,
              width: int, height: int) -> np.ndarray:
    """World positions (..., 3) float64 of pixel centres (``px`` columns, ``py`` rows counted from the
    BOTTOM as GL does) at window depth ``depth`` in [0, 1], for a ``width`` x ``height`` viewport."""
    x = (np.asarray(px, np.float64) + 0.5) / width * 2.0 - 1.0
    y = (np.asarray(py, np.float64) + 0.5) / height * 2.0 - 1.0
    z = np.asarray(depth, np.float64) * 2.0 - 1.0
    clip = np.stack([x, y, z, np.ones_like(z)], axis=-1)
    w = clip @ np.asarray(inv_view_proj, np.float64).T
    return w[..., :3] / w[..., 3:4]


def pixel_of(view_proj: np.ndarray, points: np.ndarray, width: int, height: int) -> np.ndarray:
    """Continuous window coordinates (..., 3) = (column, row from the TOP, window depth) of world points."""
    p = np.asarray(points, np.float64)
    h = np.concatenate([p, np.ones(p.shape[:-1] + (1,))], axis=-1) @ np.asarray(view_proj, np.float64).T
    ndc = h[..., :3] / h[..., 3:4]
    return np.stack([(ndc[..., 0] + 1) / 2 * width, (1 - ndc[..., 1]) / 2 * height, (ndc[..., 2] + 1) / 2],
                    axis=-1)


def interpolate_surface(positions: np.ndarray, triangles: np.ndarray, triangle: np.ndarray,
                        barycentric: np.ndarray, normals: np.ndarray | None = None
                        ) -> tuple[np.ndarray, np.ndarray]:
    """Points (N,3) and unit normals (N,3) of (triangle, barycentric) pairs on a mesh with vertices
    ``positions`` (V,3) and ``triangles`` (T,3). Normals interpolate ``normals`` (V,3) when given,
    else they are the faces' geometric normals."""
    tri = np.asarray(triangle, np.int64).reshape(-1)
    t = np.asarray(triangles, np.int64)
    if tri.size and (tri.min() < 0 or tri.max() >= len(t)):
        raise ValueError(f"triangle indices must be in [0, {len(t) - 1}], got [{tri.min()}, {tri.max()}]")
    b = np.asarray(barycentric, np.float64).reshape(-1, 3)
    if len(b) != len(tri):
        raise ValueError(f"need one barycentric triple per triangle index, got {len(b)} for {len(tri)}")
    corners = t[tri]  # (N,3)
    p = np.asarray(positions, np.float64)[:, :3]
    pts = np.einsum("nk,nkc->nc", b, p[corners])
    if normals is not None:
        n = np.einsum("nk,nkc->nc", b, np.asarray(normals, np.float64)[:, :3][corners])
    else:
        n = np.cross(p[corners[:, 1]] - p[corners[:, 0]], p[corners[:, 2]] - p[corners[:, 0]])
    ln = np.linalg.norm(n, axis=1, keepdims=True)
    n = np.divide(n, ln, out=np.zeros_like(n), where=ln > 0)
    return pts.astype(np.float32), n.astype(np.float32)


@dataclass(eq=False)
class SurfaceHit:
    """What a query finds under a pixel: the mesh (renderer handle, with its entity / glTF node, mesh
    and primitive tags), the triangle, barycentrics, world position and normal, window depth, and the
    layer it was read from (None: the composited frame)."""

    mesh: MeshHandle
    triangle: int
    barycentric: np.ndarray  # (3,) float32
    position: np.ndarray  # (3,) float32 world
    normal: np.ndarray  # (3,) float32 world, facing the camera
    depth: float  # window depth in [0, 1]
    layer: str | None = None

    @property
    def entity(self) -> int:
        return self.mesh.entity

    @property
    def node(self) -> int:
        return self.mesh.node

    @property
    def mesh_index(self) -> int:
        return self.mesh.mesh_index

    @property
    def primitive(self) -> int:
        return self.mesh.primitive

    @property
    def mesh_id(self) -> int:
        return self.mesh.id

    @property
    def surface_point(self) -> SurfacePoint:
        """The pose-independent point hit: (mesh id, triangle, barycentric) as plain data."""
        b0, b1, b2 = (float(x) for x in self.barycentric)
        return SurfacePoint(self.mesh.id, self.triangle, (b0, b1, b2))
