"""Mesh checks and helpers for the generators: weld by position, edge incidence, Euler characteristic,
adjacency. All vectorised numpy; the weld is engine.math.mesh's (the one the mesh preparation uses)."""
from __future__ import annotations

import numpy as np

from engine.math.mesh import DEFAULT_WELD_TOLERANCE, bbox_diagonal, weld


def weld_by_position(positions: np.ndarray, *,
                     tolerance: float = DEFAULT_WELD_TOLERANCE) -> tuple[np.ndarray, np.ndarray]:
    """Merge display vertices closer than ``tolerance`` times the bounding-box diagonal (engine.math.mesh.weld,
    as the mesh preparation welds).

    Returns (welded_positions (V,3), control_of_display (D,)) so that
    ``welded_positions[control_of_display] ~= positions``. Control points are numbered in order of
    first appearance and sit at their first display vertex.
    """
    pos = np.asarray(positions)
    control, first = weld(pos, tolerance * bbox_diagonal(pos))
    return pos[first], control


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


def vertex_adjacency(n: int, triangles: np.ndarray):
    """Symmetric sparse (n, n) adjacency matrix (CSR, 1.0 per edge) of a triangle mesh."""
    from scipy.sparse import coo_matrix

    edges, _ = edge_incidence(triangles)
    i = np.concatenate([edges[:, 0], edges[:, 1]])
    j = np.concatenate([edges[:, 1], edges[:, 0]])
    return coo_matrix((np.ones(i.size), (i, j)), shape=(n, n)).tocsr()
