"""Sheets touching at bind: points of the mesh lying on a face they are not a corner of (issue 26).

A coarse rig's boxes are often modelled touching: RiggedFigure's arm boxes meet the torso's side wall a
two-hundredth of an edge from its plane, joined to it by sliver faces. LBS keeps such a point on the face's side
by its weights; the springs move it by a few hundredths of an edge and the sheets cross, and the contact term
leaves alone what was close at bind (by design: those surfaces may stay as close as they were). So a point that lies
within TOUCH times its mean bind edge length h_i of a face it is not a corner of, away from the face's corners
(`touching_points`), is *glued* to that face: it keeps its bind position relative to the face, the closest point's
barycentrics plus the offset from it in the face's own frame (`touch_targets`), and is held there like a rigid point
(no force, no velocity; its position is set from the face's corners after every update: `glue`). The face's corners
are free, so the sheets move together where they touched, as LBS keeps them, and the point can only cross the face
if the face turns through it. Everything is relative to local bind edge lengths: no unit, no per-asset switch.

Per point the rule needs its face's three corners, two barycentrics and an offset (GPU, not yet ported: a few extra
reads per point, as the rigid points' joint record). docs/springs.md, "Sheets touching at bind".
"""
from __future__ import annotations

import numpy as np
from scipy.spatial import cKDTree

from engine.skinning.springs.params import TOUCH, TOUCH_CORNER

__all__ = ["touching_points", "face_frames", "touch_targets", "glue"]


def face_frames(a: np.ndarray, b: np.ndarray, c: np.ndarray) -> np.ndarray:
    """(F,3,3) orthonormal frames of triangles (a, b, c) (each (F,3)), rows e1 = unit(b - a), e2 = n x e1,
    n = unit((b - a) x (c - a)): the frame a glued point's offset is kept in."""
    e1 = b - a
    n = np.cross(e1, c - a)
    e1 = e1 / np.maximum(np.linalg.norm(e1, axis=1), 1e-300)[:, None]
    n = n / np.maximum(np.linalg.norm(n, axis=1), 1e-300)[:, None]
    return np.stack([e1, np.cross(n, e1), n], 1)


def touching_points(x: np.ndarray, triangles: np.ndarray, h: np.ndarray, free: np.ndarray | None = None
                    ) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Per point (corners (V,3) int, -1 rows where it touches nothing; barycentrics (V,3); offset (V,3) in the
    face's frame, `face_frames`) of the face it is glued to.

    x (V,3) bind positions, triangles (T,3), h (V,) mean bind edge length per point; free (V,) bool: the points
    solved for (not the rigid ones; a rigid shell follows its joint as LBS moves it, and gluing a soft sheet to it
    would drag the sheet with a joint its weights do not name): only they are glued, and only to faces of theirs.
    A point touches a face it is not a corner of when the face's closest point lies within TOUCH h_i of it and
    within TOUCH_CORNER of its distance to the face's nearest corner (on the face, not beside one of its points:
    two points a sliver's short edge apart, or on two rings of a coarse limb, are as near every face around either,
    and gluing one there would tie two points, not two sheets). Glue does not chain: the pairs are taken finest
    point first (smallest h_i), then nearest (relative to h_i); a point that is a corner of a face glued to is not
    glued, and a face with a glued corner is not glued to (so no glued point hangs on another and no two hang on
    each other)."""
    from engine.skinning.weights.spline import _closest_on_triangles

    x = np.asarray(x, np.float64)
    tri = np.asarray(triangles, np.int64).reshape(-1, 3)
    n = x.shape[0]
    corners = np.full((n, 3), -1, np.int64)
    bary = np.zeros((n, 3))
    local = np.zeros((n, 3))
    if n == 0 or tri.shape[0] == 0:
        return corners, bary, local
    h = np.asarray(h, np.float64)
    ok_pt = (h > 0.0) if free is None else (h > 0.0) & np.asarray(free, bool)
    centre = x[tri].mean(1)
    radius = np.linalg.norm(x[tri] - centre[:, None], axis=2).max(1)
    # candidate (point, face) pairs: per face the points within its own radius plus the largest reach (one large
    # face beside many small ones costs the points near it, not every point times every face)
    pts = np.nonzero(ok_pt)[0]
    if pts.size == 0:
        return corners, bary, local
    lists = cKDTree(x[pts]).query_ball_point(centre, radius + TOUCH * float(h[pts].max()))
    cnt = np.array([len(c) for c in lists], np.int64)
    fi = np.repeat(np.arange(tri.shape[0]), cnt)
    pi = pts[np.concatenate([np.asarray(c, np.int64) for c in lists])] if fi.size else np.zeros(0, np.int64)
    keep = ~np.any(tri[fi] == pi[:, None], axis=1) & np.all(ok_pt[tri[fi]], axis=1)
    pi, fi = pi[keep], fi[keep]
    if pi.size == 0:
        return corners, bary, local
    b = _closest_on_triangles(x[pi], x[tri[fi, 0]], x[tri[fi, 1]], x[tri[fi, 2]])
    q = np.einsum("pk,pkj->pj", b, x[tri[fi]])
    d = np.linalg.norm(x[pi] - q, axis=1)
    # on the face, not beside one of its corners: two points close together (a sliver's short edge, two rings of a
    # coarse limb) are as near every face around either, and gluing one there would tie two points, not two sheets
    corner = np.linalg.norm(x[tri[fi]] - x[pi][:, None], axis=2).min(1)
    near = (d < TOUCH * h[pi]) & (d < TOUCH_CORNER * corner)
    pi, fi, b, q, d = pi[near], fi[near], b[near], q[near], d[near]
    glued = np.zeros(n, bool)
    anchor = np.zeros(n, bool)
    # the finer sheet first, then the nearest (relative to h_i): where two sheets touch face to face, each has
    # points on the other's faces; the finer one's follow the coarser one's faces, whose corners stay free
    for k in np.lexsort((fi, d / h[pi], h[pi])):  # set-up only, over the few touching pairs
        i, c = pi[k], tri[fi[k]]
        if glued[i] or anchor[i] or np.any(glued[c]):
            continue
        glued[i] = True
        anchor[c] = True
        corners[i] = c
        bary[i] = b[k]
        frame = face_frames(x[c[None, 0]], x[c[None, 1]], x[c[None, 2]])[0]
        local[i] = frame @ (x[i] - q[k])
    return corners, bary, local


def touch_targets(x: np.ndarray, corners: np.ndarray, bary: np.ndarray, local: np.ndarray) -> np.ndarray:
    """(G,3) where the glued points (rows of corners/bary/local, all glued) belong at positions x: the bind
    barycentric point of their face plus the bind offset in the face's current frame."""
    a, b, c = x[corners[:, 0]], x[corners[:, 1]], x[corners[:, 2]]
    q = bary[:, :1] * a + bary[:, 1:2] * b + bary[:, 2:] * c
    return q + np.einsum("pij,pi->pj", face_frames(a, b, c), local)


def glue(x: np.ndarray, corners: np.ndarray, bary: np.ndarray, local: np.ndarray, src: np.ndarray | None = None
         ) -> np.ndarray:
    """x with every glued point (corners[:, 0] >= 0) set to its target (`touch_targets`) on its face's corners in
    `src` (None: x itself); x itself when none. The iteration passes the previous iterate as src (the glue lags one
    iteration, as the GPU's Jacobi dispatch reads its neighbours' previous state)."""
    g = corners[:, 0] >= 0
    if not np.any(g):
        return x
    out = np.array(x, np.float64)
    out[g] = touch_targets(np.asarray(out if src is None else src, np.float64), corners[g], bary[g], local[g])
    return out
