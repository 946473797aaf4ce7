"""Triangle-mesh maths shared by the mesh preparation, the character generators and the renderer.

One copy of each: face and vertex normals (with an explicit fallback for vertices without area), welding of
display vertices by position (a distance tolerance, pairs found with a k-d tree and merged transitively) and
the CSR builder used for sparse adjacency. All of it is vectorised numpy over float64 internally.

Normals: the cross product of a triangle's edges has length twice its area, so summing raw cross products
around a vertex weights the faces by area. A vertex (or face) whose sum has zero length has no defined normal;
it gets ``fallback``: the zero vector by default (what the GPU normal stages write, and what the deformer
references compare with), or a direction such as +Y where a shaded surface needs some unit normal.
With a crease angle, normals are computed per display vertex: a face around the display vertex's control point
contributes only when its normal is within the crease angle of the display vertex's own smoothing-group normal
(the area-weighted normal of the faces that reference that display vertex). This smooths across UV seams and
keeps hard edges.
"""
from __future__ import annotations

from collections.abc import Sequence

import numpy as np
from scipy.sparse import coo_matrix
from scipy.sparse.csgraph import connected_components
from scipy.spatial import cKDTree

from engine.math.numerics import quiet_underflow

DEFAULT_WELD_TOLERANCE = 1e-6
"""Default weld distance relative to the bounding-box diagonal (the mesh preparation's and the generators')."""

__all__ = ["DEFAULT_WELD_TOLERANCE", "check_triangle_mesh", "bbox_diagonal", "triangle_cross", "normalize_rows",
           "face_normals", "vertex_normals", "weld", "csr"]


def check_triangle_mesh(positions: np.ndarray, triangles: np.ndarray,
                        what: str = "positions") -> tuple[np.ndarray, np.ndarray]:
    """Validated ``(positions (N,3), triangles (T,3) int64)``; ValueError names the bad shape, index or value."""
    pos = np.asarray(positions)
    tri = np.asarray(triangles)
    if pos.ndim != 2 or pos.shape[1] != 3:
        raise ValueError(f"{what} must have shape (N,3), got {pos.shape}")
    if tri.ndim != 2 or tri.shape[1] != 3:
        raise ValueError(f"triangles must have shape (T,3), got {tri.shape}")
    if tri.size and (tri.min() < 0 or tri.max() >= pos.shape[0]):
        raise ValueError(
            f"triangle indices must lie in [0, {pos.shape[0] - 1}], got [{tri.min()}, {tri.max()}]"
        )
    if not np.all(np.isfinite(pos)):
        raise ValueError(f"{what} contain non-finite values")
    return pos, tri.astype(np.int64, copy=False)


def bbox_diagonal(positions: np.ndarray) -> float:
    """Length of the axis-aligned bounding-box diagonal of (N,3) points (0 for no points)."""
    if positions.shape[0] == 0:
        return 0.0
    p = np.asarray(positions, np.float64)
    return float(np.linalg.norm(p.max(axis=0) - p.min(axis=0)))


def triangle_cross(positions: np.ndarray, triangles: np.ndarray) -> np.ndarray:
    """Un-normalised face normals (T,3) float64, (b - a) x (c - a); length = twice the triangle area."""
    p = np.asarray(positions, np.float64)
    a, b, c = p[triangles[:, 0]], p[triangles[:, 1]], p[triangles[:, 2]]
    return np.cross(b - a, c - a)


def _fallback_vector(fallback: Sequence[float] | np.ndarray | None) -> np.ndarray | None:
    if fallback is None:
        return None
    try:
        f = np.asarray(fallback, np.float64)
    except (TypeError, ValueError):
        raise TypeError(f"fallback must be None or a (3,) vector of numbers, got {fallback!r}") from None
    if f.shape != (3,) or not np.all(np.isfinite(f)):
        raise ValueError(f"fallback must be None or a finite (3,) vector, got {fallback!r}")
    return f


@quiet_underflow
def normalize_rows(x: np.ndarray, fallback: Sequence[float] | np.ndarray | None = None) -> np.ndarray:
    """Rows of (N,3) ``x`` scaled to unit length; rows of zero length become ``fallback`` (None: zero)."""
    f = _fallback_vector(fallback)
    n = np.linalg.norm(x, axis=1, keepdims=True)
    out = np.zeros_like(x)
    np.divide(x, n, out=out, where=n > 0)
    if f is not None:
        out[n[:, 0] <= 0] = f
    return out


@quiet_underflow
def face_normals(positions: np.ndarray, triangles: np.ndarray, *,
                 fallback: Sequence[float] | np.ndarray | None = None) -> np.ndarray:
    """Unit face normals (T,3) float32 (counter-clockwise front faces); zero-area triangles get ``fallback``
    (None: the zero vector)."""
    pos, tri = check_triangle_mesh(positions, triangles)
    return normalize_rows(triangle_cross(pos, tri), fallback).astype(np.float32)


@quiet_underflow
def vertex_normals(
    positions: np.ndarray,
    triangles: np.ndarray,
    *,
    fallback: Sequence[float] | np.ndarray | None = None,
    crease_angle: float | None = None,
    display_triangles: np.ndarray | None = None,
    n_display: int | None = None,
) -> np.ndarray:
    """Area-weighted unit vertex normals, float32.

    positions (V,3), triangles (T,3). Without display_triangles: (V,3) smooth normals per vertex. With
    display_triangles (T,3) (the same triangles over display indices, ``triangles`` then being over control
    points) and n_display: (D,3) normals per display vertex; crease_angle (radians, in [0, pi]) then excludes
    faces whose normal is more than crease_angle from the display vertex's smoothing-group normal (None: no
    exclusion). Vertices in no face of non-zero area get ``fallback``: None gives the zero vector, a (3,) vector
    (e.g. ``(0.0, 1.0, 0.0)``) gives that direction.
    """
    pos, tri = check_triangle_mesh(positions, triangles)
    f = _fallback_vector(fallback)
    cross = triangle_cross(pos, tri)
    v = pos.shape[0]
    if display_triangles is None:
        if crease_angle is not None:
            raise ValueError("crease_angle needs display_triangles and n_display (creases live on display vertices)")
        idx = tri.reshape(-1)
        w = np.repeat(cross, 3, axis=0)  # one row per corner, triangle-major like idx
        acc = np.stack([np.bincount(idx, weights=w[:, k], minlength=v) for k in range(3)], axis=1)
        return normalize_rows(acc, f).astype(np.float32)

    dtri = np.asarray(display_triangles).astype(np.int64)
    if dtri.shape != tri.shape:
        raise ValueError(f"display_triangles must have shape {tri.shape}, got {dtri.shape}")
    if n_display is None:
        n_display = int(dtri.max()) + 1 if dtri.size else 0
    if dtri.size and (dtri.min() < 0 or dtri.max() >= n_display):
        raise ValueError(f"display_triangles indices must lie in [0, {n_display - 1}]")
    if crease_angle is not None and not (0.0 <= float(crease_angle) <= np.pi):
        raise ValueError(f"crease_angle must be in [0, pi] radians, got {crease_angle!r}")
    ctrl_of_d = np.full(n_display, -1, np.int64)
    ctrl_of_d[dtri.reshape(-1)] = tri.reshape(-1)
    # faces incident to each control point (corners sorted by control point)
    fv = tri.reshape(-1)
    ff = np.repeat(np.arange(tri.shape[0]), 3)
    order = np.argsort(fv, kind="stable")
    fv, ff = fv[order], ff[order]
    counts = np.bincount(fv, minlength=v)
    starts = np.concatenate(([0], np.cumsum(counts)[:-1]))
    used = np.nonzero(ctrl_of_d >= 0)[0]
    c = ctrl_of_d[used]
    n_pairs = counts[c]
    d_of_pair = np.repeat(used, n_pairs)
    # flat index of every (display vertex, incident face) pair
    pair_base = np.repeat(starts[c] - np.concatenate(([0], np.cumsum(n_pairs)[:-1])), n_pairs)
    f_of_pair = ff[pair_base + np.arange(d_of_pair.shape[0])]
    # a face repeated in a collapsed triangle appears once per corner; dedupe (display, face) pairs
    t = max(tri.shape[0], 1)
    key = np.unique(d_of_pair * t + f_of_pair)
    d_of_pair, f_of_pair = key // t, key % t
    contrib = cross[f_of_pair]
    if crease_angle is not None:
        # smoothing-group normal of each display vertex: the faces that reference it
        ref = np.zeros((n_display, 3))
        for k in range(3):
            np.add.at(ref, dtri[:, k], cross)
        unit_ref = normalize_rows(ref)[d_of_pair]
        unit_f = normalize_rows(cross)[f_of_pair]
        keep = np.einsum("ij,ij->i", unit_ref, unit_f) >= np.cos(float(crease_angle)) - 1e-9
        contrib = np.where(keep[:, None], contrib, 0.0)
    out = np.zeros((n_display, 3))
    np.add.at(out, d_of_pair, contrib)
    return normalize_rows(out, f).astype(np.float32)


def weld(positions: np.ndarray, tolerance: float) -> tuple[np.ndarray, np.ndarray]:
    """Merge points (D,3) closer than ``tolerance`` (an absolute distance, >= 0) into control points.

    Pairs within the tolerance are found with a k-d tree and merged transitively (connected components), so the
    result does not depend on a quantisation grid; 0 merges only bit-identical positions. Returns
    ``(control_of_display (D,), display_of_control (V,))`` int64, control points numbered in order of first
    occurrence, each represented by its first display vertex.
    """
    tol = float(tolerance)
    if not tol >= 0.0:
        raise ValueError(f"weld tolerance must be a distance >= 0, got {tolerance!r}")
    pos = np.asarray(positions, np.float64)
    if pos.ndim != 2 or pos.shape[1] != 3:
        raise ValueError(f"positions must have shape (N,3), got {pos.shape}")
    d = pos.shape[0]
    if d == 0:
        return np.zeros(0, np.int64), np.zeros(0, np.int64)
    if tol > 0.0:
        pairs = cKDTree(pos).query_pairs(tol, output_type="ndarray")
        graph = coo_matrix((np.ones(len(pairs), np.int8), (pairs[:, 0], pairs[:, 1])), shape=(d, d))
        _, labels = connected_components(graph, directed=False)
    else:
        _, labels = np.unique(pos, axis=0, return_inverse=True)
        labels = labels.reshape(-1)
    return relabel_by_first(labels)


def relabel_by_first(labels: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Non-negative integer ``labels`` (N,) renumbered 0..K-1 in the order of their first occurrence, and the
    first index of each new label (K,), both int64 (a weld's control points keep the display order)."""
    labels = np.asarray(labels).reshape(-1)
    if labels.size == 0:
        return labels.astype(np.int64), np.zeros(0, np.int64)
    uniq, first = np.unique(labels, return_index=True)
    order = np.argsort(first, kind="stable")
    rank = np.empty(uniq.shape[0], np.int64)
    rank[order] = np.arange(uniq.shape[0])
    lut = np.empty(int(labels.max()) + 1, np.int64)
    lut[uniq] = rank
    return lut[labels], first[order].astype(np.int64)


def csr(rows: np.ndarray, cols: np.ndarray, n: int) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Compressed sparse rows of ``n`` rows from (row, col) pairs: ``(offset (n,), count (n,), index)`` int32.

    ``index[offset[r]:offset[r] + count[r]]`` are the columns of row ``r``, sorted ascending (pairs are sorted by
    row, then column; repeated pairs are kept).
    """
    rows = np.asarray(rows, np.int64)
    cols = np.asarray(cols, np.int64)
    if rows.shape != cols.shape or rows.ndim != 1:
        raise ValueError(f"rows and cols must be equal-length 1-D arrays, got shapes {rows.shape} and {cols.shape}")
    if rows.size and (rows.min() < 0 or rows.max() >= n):
        raise ValueError(f"row indices must lie in [0, {n - 1}], got [{rows.min()}, {rows.max()}]")
    order = np.lexsort((cols, rows))
    count = np.bincount(rows, minlength=n)
    offset = np.concatenate(([0], np.cumsum(count)[:-1])) if n else np.zeros(0, np.int64)
    return offset.astype(np.int32), count.astype(np.int32), cols[order].astype(np.int32)
