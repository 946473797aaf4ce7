"""Mesh checks and helpers for the generators: weld by position, edge incidence, Euler characteristic,
area-weighted vertex normals. All vectorised numpy."""
from __future__ import annotations

import numpy as np


def weld_by_position(positions: np.ndarray, *, decimals: int = 6) -> tuple[np.ndarray, np.ndarray]:
    """Merge display vertices with equal positions (rounded to ``decimals``).

    Returns (welded_positions (V,3), control_of_display (D,)) so that
    ``welded_positions[control_of_display] ~= positions``. Control points are numbered in order of
    first appearance, so the result does not depend on sort order of the keys.
    """
    key = np.round(np.asarray(positions, np.float64), decimals)
    _, first, inverse = np.unique(key, axis=0, return_index=True, return_inverse=True)
    inverse = inverse.reshape(-1)
    order = np.argsort(first, kind="stable")  # unique rows sorted by first appearance
    rank = np.empty_like(order)
    rank[order] = np.arange(order.size)
    control = rank[inverse]
    return np.asarray(positions)[first[order]], control.astype(np.int64)


def edge_incidence(triangles: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Unique undirected edges (E,2) (i < j, sorted) and how many triangles use each (E,)."""
    t = np.asarray(triangles, np.int64).reshape(-1, 3)
    e = np.concatenate([t[:, [0, 1]], t[:, [1, 2]], t[:, [2, 0]]])
    e = np.sort(e, axis=1)
    edges, counts = np.unique(e, axis=0, return_counts=True)
    return edges, counts


def topology_report(positions: np.ndarray, triangles: np.ndarray) -> dict:
    """Closedness and manifoldness of a triangle mesh after welding by position.

    Keys: vertices (welded), triangles, edges, boundary_edges (used by 1 triangle), nonmanifold_edges (>2),
    inconsistent_edges (a directed edge used twice in the same direction: flipped winding),
    degenerate_triangles (a repeated welded vertex), euler (V - E + F), components (connected).
    """
    welded, ctrl = weld_by_position(positions)
    t = ctrl[np.asarray(triangles, np.int64).reshape(-1, 3)]
    degenerate = (t[:, 0] == t[:, 1]) | (t[:, 1] == t[:, 2]) | (t[:, 2] == t[:, 0])
    edges, counts = edge_incidence(t)
    directed = np.concatenate([t[:, [0, 1]], t[:, [1, 2]], t[:, [2, 0]]])
    _, dcounts = np.unique(directed, axis=0, return_counts=True)
    components = _component_count(welded.shape[0], edges)
    return {
        "vertices": int(welded.shape[0]),
        "triangles": int(t.shape[0]),
        "edges": int(edges.shape[0]),
        "boundary_edges": int(np.sum(counts == 1)),
        "nonmanifold_edges": int(np.sum(counts > 2)),
        "inconsistent_edges": int(np.sum(dcounts > 1)),
        "degenerate_triangles": int(np.sum(degenerate)),
        "euler": int(welded.shape[0] - edges.shape[0] + t.shape[0]),
        "components": components,
    }


def _component_count(n: int, edges: np.ndarray) -> int:
    from scipy.sparse import coo_matrix
    from scipy.sparse.csgraph import connected_components

    if edges.size == 0:
        return n
    g = coo_matrix((np.ones(len(edges)), (edges[:, 0], edges[:, 1])), shape=(n, n))
    return int(connected_components(g, directed=False)[0])


def vertex_normals(positions: np.ndarray, triangles: np.ndarray) -> np.ndarray:
    """Area-weighted vertex normals (N,3) float64 (zero-area neighbourhoods get +Y)."""
    p = np.asarray(positions, np.float64)
    t = np.asarray(triangles, np.int64).reshape(-1, 3)
    fn = np.cross(p[t[:, 1]] - p[t[:, 0]], p[t[:, 2]] - p[t[:, 0]])
    n = np.zeros_like(p)
    for k in range(3):
        np.add.at(n, t[:, k], fn)
    length = np.linalg.norm(n, axis=1, keepdims=True)
    return np.where(length > 1e-20, n / np.maximum(length, 1e-20), [0.0, 1.0, 0.0])


def vertex_adjacency(n: int, triangles: np.ndarray):
    """Symmetric sparse (n, n) adjacency matrix (CSR, 1.0 per edge) of a triangle mesh."""
    from scipy.sparse import coo_matrix

    edges, _ = edge_incidence(triangles)
    i = np.concatenate([edges[:, 0], edges[:, 1]])
    j = np.concatenate([edges[:, 1], edges[:, 0]])
    return coo_matrix((np.ones(i.size), (i, j)), shape=(n, n)).tocsr()
