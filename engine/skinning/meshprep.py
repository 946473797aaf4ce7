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

Normals: `face_normals` and `vertex_normals` (area-weighted, optionally with a crease angle per display
vertex) are :mod:`engine.math.mesh`'s, as are the weld and the CSR builder; with their default fallback
(zero for vertices without area) they are the references the GPU normal stages are checked against.
"""
from __future__ import annotations

import numpy as np

from engine.math.mesh import (
    DEFAULT_WELD_TOLERANCE,
    bbox_diagonal,
    check_triangle_mesh,
    csr,
    face_normals,
    triangle_cross,
    vertex_normals,
    weld,
)
from engine.math.numerics import quiet_underflow
from engine.skinning.types import MeshTopology

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
"""``DEFAULT_WELD_TOLERANCE``, ``face_normals``, ``vertex_normals`` and ``bbox_diagonal`` are engine.math.mesh's,
re-exported here beside the topology they are computed on."""


@quiet_underflow
def degenerate_triangles(positions: np.ndarray, triangles: np.ndarray) -> np.ndarray:
    """(T,) bool: triangles with a repeated index or (near) zero area relative to the bbox diagonal."""
    pos, tri = check_triangle_mesh(positions, triangles)
    repeated = (tri[:, 0] == tri[:, 1]) | (tri[:, 1] == tri[:, 2]) | (tri[:, 2] == tri[:, 0])
    diag = bbox_diagonal(pos)
    area2 = np.linalg.norm(triangle_cross(pos, tri), axis=1)
    return repeated | (area2 <= _AREA_EPS * diag * diag)


@quiet_underflow
def prepare_mesh(
    positions: np.ndarray, triangles: np.ndarray, *, weld_tolerance: float | None = None,
    morph_deltas: np.ndarray | None = None,
) -> MeshTopology:
    """Weld display vertices (D,3) of triangles (T,3) into control points and build CSR adjacency.

    weld_tolerance: merge distance relative to the bbox diagonal, in [0, 1e-2]; None means 1e-6; 0 merges
    only bit-identical positions. morph_deltas: (M,D,3) morph-target position deltas; display vertices whose
    deltas differ are not welded (engine.skinning.morph.split_by_deltas), so a seam that opens stays open.
    """
    pos, tri = check_triangle_mesh(positions, triangles)
    tol = DEFAULT_WELD_TOLERANCE if weld_tolerance is None else float(weld_tolerance)
    if not (0.0 <= tol <= MAX_WELD_TOLERANCE):
        raise ValueError(f"weld_tolerance must be in [0, {MAX_WELD_TOLERANCE}], got {weld_tolerance!r}")
    diag = bbox_diagonal(pos)
    pos64 = pos.astype(np.float64)
    control_of_display, display_of_control = weld(pos64, tol * diag)
    if morph_deltas is not None and len(morph_deltas):
        from engine.skinning.morph import split_by_deltas

        md = np.asarray(morph_deltas)
        if md.ndim != 3 or md.shape[1:] != pos.shape:
            raise ValueError(f"morph_deltas must have shape (M,{pos.shape[0]},3), got {md.shape}")
        control_of_display, display_of_control = split_by_deltas(control_of_display, md, tol * diag)
    v = display_of_control.shape[0]
    ctrl_pos = pos[display_of_control].astype(np.float32)
    ctri = control_of_display[tri] if tri.size else np.zeros((0, 3), np.int64)

    repeated = (ctri[:, 0] == ctri[:, 1]) | (ctri[:, 1] == ctri[:, 2]) | (ctri[:, 2] == ctri[:, 0])
    area2 = np.linalg.norm(triangle_cross(ctrl_pos, ctri), axis=1) if ctri.size else np.zeros(0)
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
    adj_offset, adj_count, adj_index = csr(src, dst, v)

    t = ctri.shape[0]
    fv = ctri.reshape(-1)
    ff = np.repeat(np.arange(t), 3)
    fpair = np.unique(fv * max(t, 1) + ff)
    face_offset, face_count, face_index = csr(fpair // max(t, 1), fpair % max(t, 1), v)

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
