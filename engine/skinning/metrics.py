"""Quality metrics of a deformed mesh against its bind pose (used by `compare` and the tests).

- volume: signed volume by the divergence theorem, sum over triangles of v0 . (v1 x v2) / 6 (positive for a
  closed mesh with counter-clockwise outward faces); volume_ratio = deformed / bind.
- collapse: per point, the distance to the nearest posed bone segment divided by the same distance at bind;
  LBS candy-wrapper and elbow collapse show as a small minimum / 5th percentile.
- edge distortion: |l / l0 - 1| over edges (mean, max).
- normal smoothness around a joint: mean angle between the normals of faces sharing an interior edge, over
  the faces within `radius` of the joint at bind; a skinning crease raises it above the bind value.
`quality_report` collects them in one dict of floats.
"""
from __future__ import annotations

import numpy as np

from engine.math.numerics import quiet_underflow
from engine.skinning.binding import nearest_bone
from engine.skinning.types import Bones, bone_endpoints

__all__ = [
    "volume",
    "volume_ratio",
    "skeleton_distance",
    "collapse",
    "edge_distortion",
    "interior_edge_faces",
    "normal_smoothness",
    "quality_report",
]




def _tri(triangles: np.ndarray, n: int) -> np.ndarray:
    tri = np.asarray(triangles).astype(np.int64)
    if tri.ndim != 2 or tri.shape[1] != 3:
        raise ValueError(f"triangles must have shape (T,3), got {tri.shape}")
    if tri.size and (tri.min() < 0 or tri.max() >= n):
        raise ValueError(f"triangle indices must lie in [0, {n - 1}], got [{tri.min()}, {tri.max()}]")
    return tri


@quiet_underflow
def volume(positions: np.ndarray, triangles: np.ndarray) -> float:
    """Signed enclosed volume (divergence theorem), float64."""
    p = np.asarray(positions, np.float64)
    tri = _tri(triangles, p.shape[0])
    a, b, c = p[tri[:, 0]], p[tri[:, 1]], p[tri[:, 2]]
    return float(np.einsum("ij,ij->", a, np.cross(b, c)) / 6.0)


def volume_ratio(positions: np.ndarray, bind_positions: np.ndarray, triangles: np.ndarray) -> float:
    """volume(deformed) / volume(bind); ValueError when the bind volume is zero (open or flat mesh)."""
    v0 = volume(bind_positions, triangles)
    if v0 == 0.0:
        raise ValueError("bind volume is 0: the volume ratio needs a closed mesh")
    return volume(positions, triangles) / v0


@quiet_underflow
def skeleton_distance(positions: np.ndarray, bones: Bones, joints: np.ndarray) -> np.ndarray:
    """(V,) distance of every point to the nearest bone segment for joint world matrices (J,4,4)."""
    p, c = bone_endpoints(bones, np.asarray(joints, np.float32))
    return nearest_bone(np.asarray(positions, np.float32), p, c)[2].astype(np.float64)


def collapse(
    positions: np.ndarray, bind_positions: np.ndarray, bones: Bones, bind_joints: np.ndarray, posed_joints: np.ndarray
) -> dict:
    """Distance-to-skeleton ratio posed / bind per point: min and 5th percentile (points on the skeleton
    at bind, distance < 1e-6 of the largest, are left out)."""
    d0 = skeleton_distance(bind_positions, bones, bind_joints)
    d1 = skeleton_distance(positions, bones, posed_joints)
    ok = d0 > 1e-6 * max(float(d0.max(initial=0.0)), 1e-30)
    if not ok.any():
        return {"collapse_min": 1.0, "collapse_p5": 1.0}
    r = d1[ok] / d0[ok]
    return {"collapse_min": float(r.min()), "collapse_p5": float(np.percentile(r, 5))}


@quiet_underflow
def edge_distortion(positions: np.ndarray, bind_positions: np.ndarray, edges: np.ndarray) -> dict:
    """Mean and max of |l / l0 - 1| over edges (E,2) with l0 > 0."""
    p = np.asarray(positions, np.float64)
    p0 = np.asarray(bind_positions, np.float64)
    e = np.asarray(edges).astype(np.int64).reshape(-1, 2)
    l0 = np.linalg.norm(p0[e[:, 0]] - p0[e[:, 1]], axis=1)
    l1 = np.linalg.norm(p[e[:, 0]] - p[e[:, 1]], axis=1)
    ok = l0 > 0
    if not ok.any():
        return {"edge_distortion_mean": 0.0, "edge_distortion_max": 0.0}
    d = np.abs(l1[ok] / l0[ok] - 1.0)
    return {"edge_distortion_mean": float(d.mean()), "edge_distortion_max": float(d.max())}


def interior_edge_faces(triangles: np.ndarray) -> np.ndarray:
    """(K,2) pairs of faces sharing an edge that exactly two faces share (manifold interior edges)."""
    tri = np.asarray(triangles).astype(np.int64)
    if tri.shape[0] == 0:
        return np.zeros((0, 2), np.int64)
    n = int(tri.max()) + 1
    he = np.sort(tri[:, [[0, 1], [1, 2], [2, 0]]].reshape(-1, 2), axis=1)
    face = np.repeat(np.arange(tri.shape[0]), 3)
    ok = he[:, 0] != he[:, 1]
    key, face = he[ok, 0] * n + he[ok, 1], face[ok]
    order = np.argsort(key, kind="stable")
    key, face = key[order], face[order]
    uniq, start, count = np.unique(key, return_index=True, return_counts=True)
    two = start[count == 2]
    pairs = np.stack([face[two], face[two + 1]], axis=1)
    return pairs[pairs[:, 0] != pairs[:, 1]]


def _face_unit_normals(p: np.ndarray, tri: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    a, b, c = p[tri[:, 0]], p[tri[:, 1]], p[tri[:, 2]]
    n = np.cross(b - a, c - a)
    ln = np.linalg.norm(n, axis=1)
    out = np.zeros_like(n)
    np.divide(n, ln[:, None], out=out, where=ln[:, None] > 0)
    return out, ln > 0


@quiet_underflow
def normal_smoothness(
    positions: np.ndarray,
    bind_positions: np.ndarray,
    triangles: np.ndarray,
    center: np.ndarray,
    radius: float,
) -> dict:
    """Mean angle (radians) between adjacent face normals for faces whose bind centroid lies within radius of
    center (the joint's bind position): posed, bind and their difference (posed - bind)."""
    if not radius > 0:
        raise ValueError(f"radius must be > 0, got {radius!r}")
    p = np.asarray(positions, np.float64)
    p0 = np.asarray(bind_positions, np.float64)
    tri = _tri(triangles, p0.shape[0])
    centroid = p0[tri].mean(axis=1)
    inside = np.linalg.norm(centroid - np.asarray(center, np.float64).reshape(3), axis=1) <= radius
    pairs = interior_edge_faces(tri)
    pairs = pairs[inside[pairs[:, 0]] & inside[pairs[:, 1]]]
    out = {}
    for name, pts in (("normal_angle_bind", p0), ("normal_angle", p)):
        n, ok = _face_unit_normals(pts, tri)
        good = ok[pairs[:, 0]] & ok[pairs[:, 1]]
        dots = np.clip(np.einsum("ij,ij->i", n[pairs[good, 0]], n[pairs[good, 1]]), -1.0, 1.0)
        out[name] = float(np.arccos(dots).mean()) if dots.size else 0.0
    out["normal_angle_increase"] = out["normal_angle"] - out["normal_angle_bind"]
    out["normal_pairs"] = int(pairs.shape[0])
    return out


def quality_report(
    positions: np.ndarray,
    bind_positions: np.ndarray,
    triangles: np.ndarray,
    *,
    edges: np.ndarray | None = None,
    bones: Bones | None = None,
    bind_joints: np.ndarray | None = None,
    posed_joints: np.ndarray | None = None,
    joint: int | None = None,
    radius: float | None = None,
) -> dict:
    """All metrics that the given inputs allow, as a flat dict of floats.

    Always: volume_bind, volume, volume_ratio (when the bind volume is non-zero), edge distortion (edges
    default to the triangles' unique edges). With bones, bind_joints and posed_joints: collapse_min /
    collapse_p5. With joint (index into the joints) and bind_joints: normal smoothness within radius of
    the joint (default half the shortest bone touching it, which needs bones).
    """
    p = np.asarray(positions, np.float64)
    p0 = np.asarray(bind_positions, np.float64)
    if p.shape != p0.shape or p.ndim != 2 or p.shape[1] != 3:
        raise ValueError(f"positions and bind_positions must both be (V,3), got {p.shape} and {p0.shape}")
    tri = _tri(triangles, p0.shape[0])
    if edges is None:
        he = np.sort(tri[:, [[0, 1], [1, 2], [2, 0]]].reshape(-1, 2), axis=1)
        edges = np.unique(he[he[:, 0] != he[:, 1]], axis=0)
    rep: dict = {"volume_bind": volume(p0, tri), "volume": volume(p, tri)}
    rep["volume_ratio"] = rep["volume"] / rep["volume_bind"] if rep["volume_bind"] != 0 else float("nan")
    rep.update(edge_distortion(p, p0, edges))
    if bones is not None and bind_joints is not None and posed_joints is not None:
        rep.update(collapse(p, p0, bones, bind_joints, posed_joints))
    if joint is not None:
        if bind_joints is None:
            raise ValueError("joint needs bind_joints (the joint's bind position is the region centre)")
        bj = np.asarray(bind_joints, np.float64)
        if not (0 <= int(joint) < bj.shape[0]):
            raise ValueError(f"joint must be in [0, {bj.shape[0] - 1}], got {joint!r}")
        if radius is None:
            if bones is None:
                raise ValueError("joint without radius needs bones (radius = half the shortest bone at the joint)")
            pb, cb = bone_endpoints(bones, bj)
            touch = (bones.parent_joint == joint) | (bones.child_joint == joint)
            lengths = np.linalg.norm((cb - pb)[touch].astype(np.float64), axis=1)
            radius = 0.5 * float(lengths.min()) if lengths.size else 0.1 * float(np.ptp(p0, axis=0).max())
        rep.update(normal_smoothness(p, p0, tri, bj[int(joint), :3, 3], radius))
    return rep
