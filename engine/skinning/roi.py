"""Regions of interest of surface edits (research 7.4, Fig. 34) and silhouette selection (7.3, after SilSketch).

A surface stroke is a list of samples (triangle, barycentric) on one mesh: what the G-buffer query returns
under each window point. The region it selects, over the mesh's control points (welded display vertices, the
spring deformer's domain), is three disjoint sets:

  kinematic  the vertices of every face the stroke crosses; the artist drives them (edit targets)
  passive    the vertices grown from the kinematic set: up to ``rings`` edges away (breadth first; 4 by
             default), or within a Euclidean or geodesic ``radius`` of the nearest kinematic vertex; the
             springs move them to follow the kinematic ones
  static     the ring just outside kinematic + passive: the boundary the solver holds in place

"Faces the stroke crosses" means every face between consecutive samples too: :func:`crossed_faces` walks the
mesh from one sample to the next (a straight walk across the faces, the segment projected onto each face's
plane in turn; a breadth-first search over face adjacency where the straight walk cannot continue, e.g. around
a fold), so a stroke given by few samples, or drawn fast over small triangles, skips no face.

Design notes. The static set is exactly the vertex boundary of kinematic + passive in the mesh graph, the graph
whose edges the springs act along: every path from the region to the rest of the mesh passes through a static
vertex, so holding the static vertices confines an edit to its region (engine.skinning.springs honours this).
Radius growth is a flood fill from the kinematic set through vertices within the radius (never a jump across
empty space to another limb): Euclidean measures the straight distance to the nearest kinematic vertex,
geodesic the shortest path along mesh edges (Dijkstra; an upper bound of the true surface distance: at most
about sqrt(2) times it on a grid split along one diagonal, less on irregular meshes).

Silhouettes (7.3): a Laplacian edge filter over a G-buffer channel (normal by default; position or depth),
masked by the mesh's id, marks the silhouette pixels (:func:`silhouette_pixels`, the numpy reference of the
filter; the GPU filter is engine/render/silhouette.py, with the channels' default thresholds); each names its
triangle's nearest corner (:func:`silhouette_vertices`). An accent stroke picks the
silhouette vertices nearest its two ends; :func:`silhouette_chain` links them along the outline; the region
grows from the chain by rings (:func:`region_around`).
"""
from __future__ import annotations

import math
from collections import deque
from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np

from engine.gpu.layouts import SILHOUETTE_THRESHOLDS
from engine.skinning.types import MeshTopology

__all__ = ["DEFAULT_RINGS", "Region", "crossed_faces", "face_adjacency", "grow_rings", "grow_radius",
           "outer_ring", "passive_falloff", "region_of_interest", "surface_positions", "SILHOUETTE_THRESHOLDS",
           "laplacian_edges", "silhouette_pixels", "silhouette_vertices", "silhouette_chain", "region_around"]

DEFAULT_RINGS = 4
_MAX_WALK = 4096  # faces one straight walk between two samples may cross before giving up on it


@dataclass(frozen=True)
class Region:
    """The three sets of a region of interest, sorted int32 control-point indices, and the faces the stroke
    crossed (int32 triangle indices, glTF order)."""

    kinematic: np.ndarray
    passive: np.ndarray
    static: np.ndarray
    faces: np.ndarray

    def display(self, topology: MeshTopology) -> dict[str, np.ndarray]:
        """The sets as sorted int32 display (glTF) vertex indices: every display vertex of each control point."""
        cod = np.asarray(topology.control_of_display)
        out = {}
        for name in ("kinematic", "passive", "static"):
            out[name] = np.flatnonzero(np.isin(cod, getattr(self, name))).astype(np.int32)
        return out


def _as_index(values: np.ndarray | Sequence[int], n: int, what: str) -> np.ndarray:
    arr = np.asarray(values)
    if arr.size == 0:
        return np.zeros(0, np.int64)
    if arr.dtype.kind not in "iu":
        raise TypeError(f"{what} must be integers, got dtype {arr.dtype}")
    arr = arr.reshape(-1).astype(np.int64)
    bad = arr[(arr < 0) | (arr >= n)]
    if bad.size:
        raise ValueError(f"{what} holds index {int(bad[0])} out of range; valid: 0..{n - 1}")
    return arr


def face_adjacency(triangles: np.ndarray) -> np.ndarray:
    """(T,3) int64: the face across the edge opposite each corner (-1 on a boundary; on a non-manifold edge
    one of the other faces). Edge k of face f is (corner k+1, corner k+2)."""
    tri = np.asarray(triangles, np.int64)
    t = tri.shape[0]
    a = np.concatenate([tri[:, 1], tri[:, 2], tri[:, 0]])
    b = np.concatenate([tri[:, 2], tri[:, 0], tri[:, 1]])
    face = np.tile(np.arange(t), 3)
    corner = np.repeat(np.arange(3), t)
    lo, hi = np.minimum(a, b), np.maximum(a, b)
    order = np.lexsort((face, hi, lo))
    lo, hi, face, corner = lo[order], hi[order], face[order], corner[order]
    out = np.full((t, 3), -1, np.int64)
    same = (lo[1:] == lo[:-1]) & (hi[1:] == hi[:-1]) & (face[1:] != face[:-1])
    i = np.flatnonzero(same)
    # pair each half-edge with the next one of the same edge (and the last back to the previous one)
    out[face[i], corner[i]] = face[i + 1]
    out[face[i + 1], corner[i + 1]] = face[i]
    return out


def surface_positions(positions: np.ndarray, triangles: np.ndarray, faces: np.ndarray,
                      barycentrics: np.ndarray) -> np.ndarray:
    """(N,3) points of (face, barycentric) samples on a mesh with vertex ``positions`` and ``triangles``."""
    x = np.asarray(positions, np.float64)
    tri = np.asarray(triangles, np.int64)[np.asarray(faces, np.int64)]
    return np.einsum("nk,nkj->nj", np.asarray(barycentrics, np.float64), x[tri])


def _bary_in_plane(corners: np.ndarray, p: np.ndarray) -> np.ndarray | None:
    """Barycentric coordinates of p projected onto the plane of a triangle (3,3); None when degenerate."""
    e1, e2 = corners[1] - corners[0], corners[2] - corners[0]
    d = p - corners[0]
    g11, g12, g22 = e1 @ e1, e1 @ e2, e2 @ e2
    det = g11 * g22 - g12 * g12
    if not det > 1e-30 * max(g11 * g22, 1e-300):
        return None
    r1, r2 = d @ e1, d @ e2
    u = (g22 * r1 - g12 * r2) / det
    v = (g11 * r2 - g12 * r1) / det
    return np.array([1.0 - u - v, u, v])


def _walk(x: np.ndarray, tri: np.ndarray, adj: np.ndarray, fa: int, ba: np.ndarray, fb: int,
          target: np.ndarray) -> list[int] | None:
    """Faces crossed going straight from (fa, ba) towards ``target`` (on face fb), fb included; None when the
    walk leaves the mesh, meets a degenerate face or loops before reaching fb."""
    faces = [fa]
    f, bary = fa, np.asarray(ba, np.float64)
    seen = {fa}
    for _ in range(_MAX_WALK):
        if f == fb:
            return faces
        q = _bary_in_plane(x[tri[f]], target)
        if q is None:
            return None
        d = q - bary
        # the first coordinate to reach 0 going from bary to q names the exit edge (opposite that corner)
        s_exit, k_exit = math.inf, -1
        for k in range(3):
            if d[k] < -1e-15:
                s = bary[k] / -d[k]
                if s < s_exit:
                    s_exit, k_exit = s, k
        if k_exit < 0 or s_exit > 1.0 + 1e-9:  # the target projects inside this face but is not on it
            return None
        g = int(adj[f, k_exit])
        if g < 0 or g in seen:
            return None
        p = bary + max(s_exit, 0.0) * d
        p[k_exit] = 0.0
        point = p @ x[tri[f]]
        bary_g = _bary_in_plane(x[tri[g]], point)
        if bary_g is None:
            return None
        bary = np.clip(bary_g, 0.0, 1.0)
        bary /= bary.sum()
        f = g
        faces.append(f)
        seen.add(f)
    return None


def _face_path(adj: np.ndarray, fa: int, fb: int, limit: int) -> list[int] | None:
    """A shortest path of faces from fa to fb over face adjacency (breadth first, at most ``limit`` faces
    visited); None when fb is not reached."""
    prev = {fa: -1}
    queue = deque([fa])
    while queue and len(prev) <= limit:
        f = queue.popleft()
        if f == fb:
            path = [f]
            while prev[path[-1]] >= 0:
                path.append(prev[path[-1]])
            return path[::-1]
        for g in adj[f]:
            g = int(g)
            if g >= 0 and g not in prev:
                prev[g] = f
                queue.append(g)
    return None


def crossed_faces(topology: MeshTopology, faces: np.ndarray | Sequence[int],
                  barycentrics: np.ndarray | Sequence[Sequence[float]], *,
                  positions: np.ndarray | None = None) -> np.ndarray:
    """Every face a surface stroke crosses, in stroke order without repeats, int32.

    ``faces`` (N,) triangle indices and ``barycentrics`` (N,3) of the stroke's samples on the mesh of
    ``topology``; ``positions`` (V,3) control-point positions to walk on (default: bind). Between consecutive
    samples the faces in between are added by a straight walk over the surface, or by a shortest face path
    where the walk cannot continue; samples in faces not connected to each other are refused (ValueError: the
    stroke left the surface)."""
    tri = np.asarray(topology.triangles, np.int64)
    f = _as_index(faces, tri.shape[0], "faces")
    b = np.asarray(barycentrics, np.float64).reshape(-1, 3) if len(f) else np.zeros((0, 3))
    if b.shape != (f.shape[0], 3) or not np.all(np.isfinite(b)):
        raise ValueError(f"barycentrics must be ({f.shape[0]}, 3) finite numbers, got shape {b.shape}")
    if f.size == 0:
        raise ValueError("a surface stroke needs at least one sample on the mesh")
    x = np.asarray(topology.positions if positions is None else positions, np.float64)
    if x.shape != (topology.n_control, 3):
        raise ValueError(f"positions must be ({topology.n_control}, 3), got {x.shape}")
    adj = face_adjacency(tri)
    pts = surface_positions(x, tri, f, b)
    out: list[int] = [int(f[0])]
    for i in range(1, f.shape[0]):
        fa, fb = int(f[i - 1]), int(f[i])
        if fa == fb:
            continue
        path = _walk(x, tri, adj, fa, b[i - 1], fb, pts[i])
        if path is None:
            path = _face_path(adj, fa, fb, limit=_MAX_WALK)
        if path is None:
            raise ValueError(f"surface stroke samples {i - 1} and {i} (triangles {fa} and {fb}) are not connected "
                             "on the mesh: the stroke left the surface")
        out.extend(path[1:])
    return np.asarray(list(dict.fromkeys(out)), np.int32)  # first occurrences, in stroke order


def _csr(topology: MeshTopology) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    return (np.asarray(topology.adj_offset, np.int64), np.asarray(topology.adj_count, np.int64),
            np.asarray(topology.adj_index, np.int64))


def _neighbours(topology: MeshTopology, vertices: np.ndarray) -> np.ndarray:
    """Unique one-ring neighbours of ``vertices`` (CSR gather, no Python loop over vertices)."""
    off, cnt, idx = _csr(topology)
    if vertices.size == 0:
        return np.zeros(0, np.int64)
    c = cnt[vertices]
    start = np.repeat(off[vertices], c)
    local = np.arange(int(c.sum())) - np.repeat(np.cumsum(c) - c, c)
    return np.unique(idx[start + local])


def grow_rings(topology: MeshTopology, seeds: np.ndarray, rings: int) -> np.ndarray:
    """Vertices 1..``rings`` edges away from ``seeds`` (breadth first over the one-ring graph), sorted int32."""
    if isinstance(rings, bool) or not isinstance(rings, (int, np.integer)) or not 0 <= rings <= 10_000:
        raise ValueError(f"rings must be a whole number in [0, 10000], got {rings!r}")
    n = topology.n_control
    inside = np.zeros(n, bool)
    seeds = _as_index(seeds, n, "seeds")
    inside[seeds] = True
    front = np.unique(seeds)
    grown = []
    for _ in range(int(rings)):
        nb = _neighbours(topology, front)
        nb = nb[~inside[nb]]
        if nb.size == 0:
            break
        inside[nb] = True
        grown.append(nb)
        front = nb
    return np.sort(np.concatenate(grown)).astype(np.int32) if grown else np.zeros(0, np.int32)


def _edge_graph(topology: MeshTopology, x: np.ndarray):
    from scipy.sparse import csr_matrix

    off, cnt, idx = _csr(topology)
    n = topology.n_control
    rows = np.repeat(np.arange(n), cnt)
    local = np.arange(idx.shape[0]) - np.repeat(np.cumsum(cnt) - cnt, cnt)
    cols = idx[np.repeat(off, cnt) + local]
    w = np.linalg.norm(x[cols] - x[rows], axis=1)
    w = np.maximum(w, 1e-300)  # a zero weight would read as "no edge" in a sparse matrix
    return csr_matrix((w, (rows, cols)), shape=(n, n))


def grow_radius(topology: MeshTopology, seeds: np.ndarray, radius: float, *, geodesic: bool = False,
                positions: np.ndarray | None = None) -> np.ndarray:
    """Vertices (not seeds) within ``radius`` of the nearest seed, grown as a flood fill from the seeds:
    Euclidean distance, or with ``geodesic`` the shortest path along mesh edges. Sorted int32."""
    r = float(radius)
    if not (math.isfinite(r) and r >= 0.0):
        raise ValueError(f"radius must be a finite number of metres >= 0, got {radius!r}")
    n = topology.n_control
    seeds = np.unique(_as_index(seeds, n, "seeds"))
    x = np.asarray(topology.positions if positions is None else positions, np.float64)
    if x.shape != (n, 3):
        raise ValueError(f"positions must be ({n}, 3), got {x.shape}")
    if seeds.size == 0:
        return np.zeros(0, np.int32)
    if geodesic:
        from scipy.sparse.csgraph import dijkstra

        d = dijkstra(_edge_graph(topology, x), indices=seeds, min_only=True, limit=r * (1 + 1e-12))
        within = np.isfinite(d) & (d <= r)
    else:
        from scipy.spatial import cKDTree

        d, _ = cKDTree(x[seeds]).query(x, k=1)
        within = d <= r
    inside = np.zeros(n, bool)
    inside[seeds] = True
    front = seeds
    while front.size:  # connected growth: a vertex joins only through a neighbour already inside
        nb = _neighbours(topology, front)
        nb = nb[~inside[nb] & within[nb]]
        inside[nb] = True
        front = nb
    inside[seeds] = False
    return np.flatnonzero(inside).astype(np.int32)


def outer_ring(topology: MeshTopology, region: np.ndarray) -> np.ndarray:
    """The vertices just outside ``region``: its one-ring neighbours not in it, sorted int32."""
    n = topology.n_control
    reg = np.unique(_as_index(region, n, "region"))
    inside = np.zeros(n, bool)
    inside[reg] = True
    nb = _neighbours(topology, reg)
    return nb[~inside[nb]].astype(np.int32)


def passive_falloff(topology: MeshTopology, region: Region, *, positions: np.ndarray | None = None) -> np.ndarray:
    """(P,) weights in [0, 1] of the passive vertices of ``region``, in its passive order: 1 - smoothstep(u),
    u = d_k / (d_k + d_s), with d_k and d_s the shortest paths along mesh edges (on ``positions``, default
    bind) to the nearest kinematic and static vertex. 1 beside the handles, 0 at the held ring, with zero slope
    at both ends: a profile scaled by it meets the static ring, and the handles' plateau, without a kink. A
    ratio of lengths, so the same on any unit or scale of the mesh."""
    from scipy.sparse.csgraph import dijkstra

    n = topology.n_control
    pas = _as_index(region.passive, n, "passive")
    if pas.size == 0:
        return np.zeros(0)
    x = np.asarray(topology.positions if positions is None else positions, np.float64)
    g = _edge_graph(topology, x)
    d_k = dijkstra(g, indices=_as_index(region.kinematic, n, "kinematic"), min_only=True)[pas]
    stat = _as_index(region.static, n, "static")
    d_s = dijkstra(g, indices=stat, min_only=True)[pas] if stat.size else np.full(pas.size, np.inf)
    with np.errstate(invalid="ignore", divide="ignore"):
        u = np.where(np.isfinite(d_s), d_k / (d_k + d_s), 0.0)
    u = np.clip(np.nan_to_num(u, nan=1.0), 0.0, 1.0)
    return 1.0 - u * u * (3.0 - 2.0 * u)


def region_around(topology: MeshTopology, kinematic: np.ndarray, *, rings: int | None = None,
                  radius: float | None = None, geodesic: bool = False, positions: np.ndarray | None = None,
                  faces: np.ndarray | None = None) -> Region:
    """The region grown around given kinematic vertices (a silhouette chain, a selection): passive by rings
    (default :data:`DEFAULT_RINGS`) or radius, static the ring outside."""
    if rings is not None and radius is not None:
        raise ValueError(f"give rings or radius, not both (rings={rings!r}, radius={radius!r})")
    if geodesic and radius is None:
        raise ValueError("geodesic selects by radius: give radius= with geodesic=True")
    kin = np.unique(_as_index(kinematic, topology.n_control, "kinematic")).astype(np.int32)
    if radius is not None:
        passive = grow_radius(topology, kin, radius, geodesic=geodesic, positions=positions)
    else:
        passive = grow_rings(topology, kin, DEFAULT_RINGS if rings is None else rings)
    static = outer_ring(topology, np.concatenate([kin, passive]))
    return Region(kin, passive, static, np.zeros(0, np.int32) if faces is None else np.asarray(faces, np.int32))


def region_of_interest(topology: MeshTopology, faces: np.ndarray | Sequence[int],
                       barycentrics: np.ndarray | Sequence[Sequence[float]], *, rings: int | None = None,
                       radius: float | None = None, geodesic: bool = False,
                       positions: np.ndarray | None = None) -> Region:
    """The region of interest of a surface stroke given by its samples (faces (N,), barycentrics (N,3)).

    Passive growth: ``rings`` edges (default :data:`DEFAULT_RINGS` when no radius is given), or ``radius``
    metres (Euclidean, or along mesh edges with ``geodesic``), measured on ``positions`` (V,3) (default bind);
    giving both rings and radius is refused."""
    if rings is not None and radius is not None:  # refused before the walk
        raise ValueError(f"give rings or radius, not both (rings={rings!r}, radius={radius!r})")
    if geodesic and radius is None:
        raise ValueError("geodesic selects by radius: give radius= with geodesic=True")
    crossed = crossed_faces(topology, faces, barycentrics, positions=positions)
    kin = np.asarray(topology.triangles, np.int64)[crossed]
    return region_around(topology, kin, rings=rings, radius=radius, geodesic=geodesic, positions=positions,
                         faces=crossed)


# ---- silhouettes (research 7.3, after SilSketch) ------------------------------------------------------------
# The default thresholds of the Laplacian edge filter per G-buffer channel (normal: unit vectors; position:
# metres; depth: window depth) are defined once beside the GPU filter (engine/render/silhouette.py, a numpy-only
# module); these functions are its numpy reference.


def laplacian_edges(channel: np.ndarray) -> np.ndarray:
    """(H,W) magnitude of the 4-neighbour Laplacian of a G-buffer channel (H,W) or (H,W,C), summed over its
    components (edge pixels replicate their border): the research's edge filter, numpy reference."""
    c = np.asarray(channel, np.float64)
    if c.ndim == 2:
        c = c[..., None]
    p = np.pad(c, ((1, 1), (1, 1), (0, 0)), mode="edge")
    lap = p[:-2, 1:-1] + p[2:, 1:-1] + p[1:-1, :-2] + p[1:-1, 2:] - 4.0 * c
    return np.abs(lap).sum(-1)


def silhouette_pixels(channel: np.ndarray, surface: np.ndarray, *, threshold: float) -> np.ndarray:
    """(H,W) bool: pixels of ``surface`` (a mask, e.g. one mesh's id) where the Laplacian of ``channel`` exceeds
    ``threshold``: the silhouette (and creases) as the camera sees them."""
    if not (math.isfinite(threshold) and threshold > 0):
        raise ValueError(f"threshold must be a finite number > 0, got {threshold!r}")
    return (laplacian_edges(channel) > threshold) & np.asarray(surface, bool)


def silhouette_vertices(topology: MeshTopology, faces: np.ndarray, barycentrics: np.ndarray, *,
                        positions: np.ndarray | None = None, eye: np.ndarray | None = None) -> np.ndarray:
    """Control points of silhouette pixels given by their triangles (N,) and barycentrics (N,3), sorted unique
    int32. With ``eye`` (the camera position) each pixel names the corner of its triangle whose normal is most
    nearly perpendicular to the view ray (n . v = 0 defines the silhouette; a pixel is often wider than the
    outermost facet), on ``positions`` (V,3) (default bind); without, the corner nearest the pixel."""
    tri = np.asarray(topology.triangles, np.int64)
    f = _as_index(faces, tri.shape[0], "faces")
    if f.size == 0:
        return np.zeros(0, np.int32)
    if eye is None:
        corner = np.argmax(np.asarray(barycentrics, np.float64).reshape(-1, 3), axis=1)
    else:
        from engine.math.mesh import vertex_normals

        x = np.asarray(topology.positions if positions is None else positions, np.float64)
        n = vertex_normals(x, tri)
        v = x - np.asarray(eye, np.float64)
        v /= np.maximum(np.linalg.norm(v, axis=1, keepdims=True), 1e-300)
        facing = np.abs(np.einsum("vi,vi->v", n, v))
        corner = np.argmin(facing[tri[f]], axis=1)
    return np.unique(tri[f, corner]).astype(np.int32)


def silhouette_chain(topology: MeshTopology, silhouette: np.ndarray, start: int, end: int, *,
                     positions: np.ndarray | None = None, detour: float = 10.0) -> np.ndarray:
    """The vertices from ``start`` to ``end`` (in order, int32) along the silhouette: the shortest path over mesh
    edges where an edge between two silhouette vertices costs its length and any other ``detour`` times it
    (so the chain follows the outline and bridges its pixel gaps)."""
    from scipy.sparse import csr_matrix
    from scipy.sparse.csgraph import dijkstra

    n = topology.n_control
    sil = np.zeros(n, bool)
    sil[_as_index(silhouette, n, "silhouette")] = True
    a, b = (int(v) for v in _as_index([start, end], n, "start/end"))
    x = np.asarray(topology.positions if positions is None else positions, np.float64)
    g = _edge_graph(topology, x).tocoo()
    both = sil[g.row] & sil[g.col]
    w = np.where(both, g.data, g.data * float(detour))
    graph = csr_matrix((w, (g.row, g.col)), shape=(n, n))
    dist, pred = dijkstra(graph, indices=a, return_predecessors=True)
    if not np.isfinite(dist[b]):
        raise ValueError(f"silhouette vertices {a} and {b} are not connected on the mesh")
    path = [b]
    while path[-1] != a:
        path.append(int(pred[path[-1]]))
    return np.asarray(path[::-1], np.int32)
