"""Mesh preparation: weld display vertices into control points, CSR adjacency, normals (numpy reference).

glTF splits a vertex wherever UV or normal differ (seams), so one surface point can appear as several
*display* vertices. The deformers work on *control points*: display vertices welded by position. After
deformation the vertex-copy step (`copy_to_display`) maps control values back to display vertices.

Welding uses a tolerance relative to the bounding-box diagonal: display vertices closer than
``weld_tolerance * diag`` are merged (pairs found with a k-d tree, merged transitively with connected
components, so the result does not depend on a quantisation grid). Control points are numbered in order of
first occurrence among the display vertices and take the position of that first (representative) display
vertex, so a mesh without seams keeps its vertex order and positions bit for bit.

Defects are counted in ``MeshTopology.report``, never fatal: degenerate triangles (a repeated control index
after welding, or zero area), isolated control points (no edge), non-manifold edges (more than two faces) and
boundary edges (exactly one face). Degenerate triangles are kept; `degenerate_triangles` flags them.

Normals: `face_normals` gives unit face normals; `vertex_normals` gives area-weighted vertex normals (the
cross product's length is twice the area, so summing raw cross products weights by area). With a crease
angle, normals are computed per display vertex: a face around the display vertex's control point contributes
only when its normal is within the crease angle of the display vertex's own smoothing-group normal (the
area-weighted normal of the faces that reference that display vertex). This smooths across UV seams (split
display vertices whose faces agree) and keeps hard edges (split display vertices whose faces disagree).
The GPU normal stages are checked against these functions.
"""
from __future__ import annotations

from engine.numerics import quiet_underflow

import numpy as np
from scipy.sparse import coo_matrix
from scipy.sparse.csgraph import connected_components
from scipy.spatial import cKDTree

from engine.skinning.types import MeshTopology

DEFAULT_WELD_TOLERANCE = 1e-6
"""Default weld distance relative to the bounding-box diagonal."""
MAX_WELD_TOLERANCE = 1e-2
_AREA_EPS = 1e-12
"""A triangle is degenerate when |cross| <= _AREA_EPS * diag**2 (cross = twice the area)."""

__all__ = [
    "DEFAULT_WELD_TOLERANCE",
    "prepare_mesh",
    "copy_to_display",
    "face_normals",
    "vertex_normals",
    "degenerate_triangles",
    "bbox_diagonal",
]





def bbox_diagonal(positions: np.ndarray) -> float:
    """Length of the axis-aligned bounding-box diagonal of (N,3) points (0 for no points)."""
    if positions.shape[0] == 0:
        return 0.0
    p = np.asarray(positions, np.float64)
    return float(np.linalg.norm(p.max(axis=0) - p.min(axis=0)))


def _check_mesh(positions: np.ndarray, triangles: np.ndarray, what: str = "positions") -> tuple[np.ndarray, np.ndarray]:
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


def _weld(pos: np.ndarray, tol_abs: float) -> tuple[np.ndarray, np.ndarray]:
    """(control_of_display (D,), display_of_control (V,)) with controls in first-occurrence order."""
    d = pos.shape[0]
    if d == 0:
        return np.zeros(0, np.int64), np.zeros(0, np.int64)
    if tol_abs > 0.0:
        pairs = cKDTree(pos).query_pairs(tol_abs, output_type="ndarray")
        graph = coo_matrix((np.ones(len(pairs), np.int8), (pairs[:, 0], pairs[:, 1])), shape=(d, d))
        _, labels = connected_components(graph, directed=False)
    else:
        _, labels = np.unique(pos, axis=0, return_inverse=True)
        labels = labels.reshape(-1)
    # first display index of every label; renumber labels by that first occurrence
    uniq, first = np.unique(labels, return_index=True)
    order = np.argsort(first, kind="stable")
    rank = np.empty(uniq.shape[0], np.int64)
    rank[order] = np.arange(uniq.shape[0])
    lut = np.empty(labels.max() + 1, np.int64)
    lut[uniq] = rank
    return lut[labels], first[order]


def _csr(rows: np.ndarray, cols: np.ndarray, n: int) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """CSR (offset, count, index) from unique (row, col) pairs, sorted by row then col; int32."""
    order = np.lexsort((cols, rows))
    count = np.bincount(rows, minlength=n)
    offset = np.concatenate(([0], np.cumsum(count)[:-1])) if n else np.zeros(0, np.int64)
    return offset.astype(np.int32), count.astype(np.int32), cols[order].astype(np.int32)


def _cross(pos: np.ndarray, tri: np.ndarray) -> np.ndarray:
    """Un-normalised face normals (T,3) in float64; length = twice the triangle area."""
    p = np.asarray(pos, np.float64)
    a, b, c = p[tri[:, 0]], p[tri[:, 1]], p[tri[:, 2]]
    return np.cross(b - a, c - a)


@quiet_underflow
def degenerate_triangles(positions: np.ndarray, triangles: np.ndarray) -> np.ndarray:
    """(T,) bool: triangles with a repeated index or (near) zero area relative to the bbox diagonal."""
    pos, tri = _check_mesh(positions, triangles)
    repeated = (tri[:, 0] == tri[:, 1]) | (tri[:, 1] == tri[:, 2]) | (tri[:, 2] == tri[:, 0])
    diag = bbox_diagonal(pos)
    area2 = np.linalg.norm(_cross(pos, tri), axis=1)
    return repeated | (area2 <= _AREA_EPS * diag * diag)


@quiet_underflow
def prepare_mesh(
    positions: np.ndarray, triangles: np.ndarray, *, weld_tolerance: float | None = None
) -> MeshTopology:
    """Weld display vertices (D,3) of triangles (T,3) into control points and build CSR adjacency.

    weld_tolerance: merge distance relative to the bbox diagonal, in [0, 1e-2]; None means 1e-6; 0 merges
    only bit-identical positions.
    """
    pos, tri = _check_mesh(positions, triangles)
    tol = DEFAULT_WELD_TOLERANCE if weld_tolerance is None else float(weld_tolerance)
    if not (0.0 <= tol <= MAX_WELD_TOLERANCE):
        raise ValueError(f"weld_tolerance must be in [0, {MAX_WELD_TOLERANCE}], got {weld_tolerance!r}")
    diag = bbox_diagonal(pos)
    pos64 = pos.astype(np.float64)
    control_of_display, display_of_control = _weld(pos64, tol * diag)
    v = display_of_control.shape[0]
    ctrl_pos = pos[display_of_control].astype(np.float32)
    ctri = control_of_display[tri] if tri.size else np.zeros((0, 3), np.int64)

    repeated = (ctri[:, 0] == ctri[:, 1]) | (ctri[:, 1] == ctri[:, 2]) | (ctri[:, 2] == ctri[:, 0])
    area2 = np.linalg.norm(_cross(ctrl_pos, ctri), axis=1) if ctri.size else np.zeros(0)
    degenerate = repeated | (area2 <= _AREA_EPS * diag * diag)

    # unique edges (i < j) from every triangle, self-loops of collapsed triangles dropped
    half = ctri[:, [[0, 1], [1, 2], [2, 0]]].reshape(-1, 2)
    half = np.sort(half, axis=1)
    keep = half[:, 0] != half[:, 1]
    keys = half[keep, 0] * max(v, 1) + half[keep, 1]
    ukeys = np.unique(keys)
    edges = np.stack([ukeys // max(v, 1), ukeys % max(v, 1)], axis=1)
    # faces per edge, counted over triangles with three distinct control points
    fkeys = np.sort(ctri[~repeated][:, [[0, 1], [1, 2], [2, 0]]].reshape(-1, 2), axis=1)
    fkeys = fkeys[:, 0] * max(v, 1) + fkeys[:, 1]
    faces_per_edge = np.zeros(ukeys.shape[0], np.int64)
    np.add.at(faces_per_edge, np.searchsorted(ukeys, fkeys), 1)

    src = np.concatenate([edges[:, 0], edges[:, 1]])
    dst = np.concatenate([edges[:, 1], edges[:, 0]])
    adj_offset, adj_count, adj_index = _csr(src, dst, v)

    t = ctri.shape[0]
    fv = ctri.reshape(-1)
    ff = np.repeat(np.arange(t), 3)
    fpair = np.unique(fv * max(t, 1) + ff)
    face_offset, face_count, face_index = _csr(fpair // max(t, 1), fpair % max(t, 1), v)

    report = {
        "display_vertices": int(pos.shape[0]),
        "control_points": int(v),
        "welded_vertices": int(pos.shape[0] - v),
        "triangles": int(t),
        "edges": int(edges.shape[0]),
        "degenerate_triangles": int(degenerate.sum()),
        "isolated_vertices": int((adj_count == 0).sum()),
        "nonmanifold_edges": int((faces_per_edge > 2).sum()),
        "boundary_edges": int((faces_per_edge == 1).sum()),
    }
    return MeshTopology(
        control_of_display=control_of_display.astype(np.int32),
        display_of_control=display_of_control.astype(np.int32),
        positions=ctrl_pos,
        triangles=ctri.astype(np.int32),
        display_triangles=tri.astype(np.int32),
        adj_offset=adj_offset,
        adj_count=adj_count,
        adj_index=adj_index,
        edges=edges.astype(np.int32),
        face_offset=face_offset,
        face_count=face_count,
        face_index=face_index,
        report=report,
    )


def copy_to_display(topology: MeshTopology, control_values: np.ndarray) -> np.ndarray:
    """The vertex-copy step: (V,...) values per control point -> (D,...) per display vertex."""
    vals = np.asarray(control_values)
    if vals.shape[0] != topology.n_control:
        raise ValueError(
            f"control_values must have {topology.n_control} rows (one per control point), got {vals.shape[0]}"
        )
    return vals[topology.control_of_display]


def _normalize_rows(x: np.ndarray) -> np.ndarray:
    n = np.linalg.norm(x, axis=1, keepdims=True)
    out = np.zeros_like(x)
    np.divide(x, n, out=out, where=n > 0)
    return out


@quiet_underflow
def face_normals(positions: np.ndarray, triangles: np.ndarray) -> np.ndarray:
    """Unit face normals (T,3) float32 (counter-clockwise front faces); zero for zero-area triangles."""
    pos, tri = _check_mesh(positions, triangles)
    return _normalize_rows(_cross(pos, tri)).astype(np.float32)


@quiet_underflow
def vertex_normals(
    positions: np.ndarray,
    triangles: np.ndarray,
    *,
    crease_angle: float | None = None,
    display_triangles: np.ndarray | None = None,
    n_display: int | None = None,
) -> np.ndarray:
    """Area-weighted vertex normals.

    positions (V,3), triangles (T,3) over control points. Without display_triangles: (V,3) smooth normals per
    control point. With display_triangles (T,3) (same triangles over display indices) and n_display: (D,3)
    normals per display vertex; crease_angle (radians, in [0, pi]) then excludes faces whose normal is more
    than crease_angle from the display vertex's smoothing-group normal (None: no exclusion). Vertices in no
    (non-degenerate) face get a zero normal.
    """
    pos, tri = _check_mesh(positions, triangles)
    cross = _cross(pos, tri)
    v = pos.shape[0]
    if display_triangles is None:
        if crease_angle is not None:
            raise ValueError("crease_angle needs display_triangles and n_display (creases live on display vertices)")
        acc = np.zeros((v, 3))
        for k in range(3):  # three corners, vectorised over all triangles
            np.add.at(acc, tri[:, k], cross)
        return _normalize_rows(acc).astype(np.float32)

    dtri = np.asarray(display_triangles).astype(np.int64)
    if dtri.shape != tri.shape:
        raise ValueError(f"display_triangles must have shape {tri.shape}, got {dtri.shape}")
    if n_display is None:
        n_display = int(dtri.max()) + 1 if dtri.size else 0
    if dtri.size and (dtri.min() < 0 or dtri.max() >= n_display):
        raise ValueError(f"display_triangles indices must lie in [0, {n_display - 1}]")
    # smoothing-group normal of each display vertex: faces that reference it
    ref = np.zeros((n_display, 3))
    for k in range(3):
        np.add.at(ref, dtri[:, k], cross)
    if crease_angle is None:
        pass_all = True
    else:
        if not (0.0 <= float(crease_angle) <= np.pi):
            raise ValueError(f"crease_angle must be in [0, pi] radians, got {crease_angle!r}")
        pass_all = False
    ctrl_of_d = np.full(n_display, -1, np.int64)
    ctrl_of_d[dtri.reshape(-1)] = tri.reshape(-1)
    # faces incident to each control point (CSR over corners)
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
    key = np.unique(d_of_pair * max(tri.shape[0], 1) + f_of_pair)
    d_of_pair, f_of_pair = key // max(tri.shape[0], 1), key % max(tri.shape[0], 1)
    contrib = cross[f_of_pair]
    if not pass_all:
        unit_ref = _normalize_rows(ref)[d_of_pair]
        unit_f = _normalize_rows(cross)[f_of_pair]
        keep = np.einsum("ij,ij->i", unit_ref, unit_f) >= np.cos(float(crease_angle)) - 1e-9
        contrib = np.where(keep[:, None], contrib, 0.0)
    out = np.zeros((n_display, 3))
    np.add.at(out, d_of_pair, contrib)
    return _normalize_rows(out).astype(np.float32)
