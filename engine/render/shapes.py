"""Small procedural meshes (box, UV sphere, quad) for tests, benches and scene dressing.

Each returns ``(positions (V,3) float32, triangles (T,3) uint32, texcoords (V,2) float32)`` with
counter-clockwise front faces seen from outside and texcoord v = 0 at the top of the image (glTF).
"""
from __future__ import annotations

import numpy as np


def box(size=(1.0, 1.0, 1.0), center=(0.0, 0.0, 0.0)) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """An axis-aligned box with 4 vertices per face (flat normals once normals are computed)."""
    s = np.asarray(size, np.float32) / 2.0
    if s.shape != (3,) or np.any(s <= 0):
        raise ValueError(f"box size must be 3 positive numbers, got {size!r}")
    c = np.asarray(center, np.float32)
    faces = []
    # (normal axis, sign): build each face from its two tangent axes so the winding faces outward.
    for axis in range(3):
        for sign in (1.0, -1.0):
            u_ax, v_ax = (axis + 1) % 3, (axis + 2) % 3
            quad = np.zeros((4, 3), np.float32)
            quad[:, axis] = sign
            corners = np.array([[-1, -1], [1, -1], [1, 1], [-1, 1]], np.float32)
            if sign < 0:
                corners = corners[:, ::-1]
            quad[:, u_ax], quad[:, v_ax] = corners[:, 0], corners[:, 1]
            faces.append(quad)
    pos = np.concatenate(faces) * s + c
    base = np.arange(6, dtype=np.uint32)[:, None] * 4
    tri = np.concatenate([base + [0, 1, 2], base + [0, 2, 3]], axis=1).reshape(-1, 3).astype(np.uint32)
    uv = np.tile(np.array([[0, 1], [1, 1], [1, 0], [0, 0]], np.float32), (6, 1))
    return pos.astype(np.float32), tri, uv


def uv_sphere(radius: float = 0.5, center=(0.0, 0.0, 0.0), *, rings: int = 24,
              segments: int = 48) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """A UV sphere (a seam column of duplicated vertices so texcoords wrap cleanly)."""
    if radius <= 0 or rings < 2 or segments < 3:
        raise ValueError(f"need radius > 0, rings >= 2, segments >= 3; got {radius}, {rings}, {segments}")
    v = np.linspace(0.0, 1.0, rings + 1, dtype=np.float64)
    u = np.linspace(0.0, 1.0, segments + 1, dtype=np.float64)
    uu, vv = np.meshgrid(u, v)
    theta, phi = uu * 2 * np.pi, vv * np.pi
    pos = np.stack([np.sin(phi) * np.sin(theta), np.cos(phi), np.sin(phi) * np.cos(theta)], -1).reshape(-1, 3)
    pos = (pos * radius + np.asarray(center, np.float64)).astype(np.float32)
    uv = np.stack([uu, vv], -1).reshape(-1, 2).astype(np.float32)
    r, s = np.meshgrid(np.arange(rings), np.arange(segments), indexing="ij")
    a = (r * (segments + 1) + s).reshape(-1)
    b, c, d = a + segments + 1, a + segments + 2, a + 1
    tri = np.concatenate([np.stack([a, b, c], 1), np.stack([a, c, d], 1)]).astype(np.uint32)
    # Drop the zero-area triangles at the poles.
    p = pos[tri]
    area2 = np.linalg.norm(np.cross(p[:, 1] - p[:, 0], p[:, 2] - p[:, 0]), axis=1)
    return pos, tri[area2 > 1e-12 * radius * radius], uv


def quad(size: float = 1.0, center=(0.0, 0.0, 0.0)) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """A square in the XY plane facing +Z."""
    h = size / 2.0
    pos = np.array([[-h, -h, 0], [h, -h, 0], [h, h, 0], [-h, h, 0]], np.float32) + np.asarray(center, np.float32)
    tri = np.array([[0, 1, 2], [0, 2, 3]], np.uint32)
    uv = np.array([[0, 1], [1, 1], [1, 0], [0, 0]], np.float32)
    return pos, tri, uv


def tube(points: np.ndarray, radius: float, *, sides: int = 8) -> tuple[np.ndarray, np.ndarray]:
    """A tube of ``radius`` along a polyline (N,3), N >= 2, open at both ends: ``(positions (N*sides,3) float32,
    triangles (T,3) uint32)``, ring i around point i in the plane of the polyline's tangent there (each ring's
    frame carried along the line by the smallest turn, so the tube does not twist)."""
    p = np.asarray(points, np.float64)
    if p.ndim != 2 or p.shape[1] != 3 or len(p) < 2 or radius <= 0 or sides < 3:
        raise ValueError(f"a tube needs (N>=2, 3) points, radius > 0 and sides >= 3; got {p.shape}, {radius}, {sides}")
    t = np.gradient(p, axis=0)
    t /= np.maximum(np.linalg.norm(t, axis=1, keepdims=True), 1e-12)
    ref = np.array([0.0, 1.0, 0.0]) if abs(t[0, 1]) < 0.9 else np.array([1.0, 0.0, 0.0])
    n = np.cross(t[0], ref)
    n /= np.linalg.norm(n)
    rings = []
    a = np.linspace(0.0, 2.0 * np.pi, sides, endpoint=False)
    for i in range(len(p)):
        n = n - t[i] * (n @ t[i])  # carried along: the smallest turn keeping it normal to the tangent
        length = np.linalg.norm(n)
        n = n / length if length > 1e-9 else np.cross(t[i], ref) / max(np.linalg.norm(np.cross(t[i], ref)), 1e-12)
        b = np.cross(t[i], n)
        rings.append(p[i] + radius * (np.cos(a)[:, None] * n + np.sin(a)[:, None] * b))
    pos = np.concatenate(rings).astype(np.float32)
    ring, side = np.meshgrid(np.arange(len(p) - 1), np.arange(sides), indexing="ij")
    a0 = (ring * sides + side).reshape(-1)
    a1 = (ring * sides + (side + 1) % sides).reshape(-1)
    b0, b1 = a0 + sides, a1 + sides
    tri = np.concatenate([np.stack([a0, a1, b1], 1), np.stack([a0, b1, b0], 1)]).astype(np.uint32)
    return pos, tri
