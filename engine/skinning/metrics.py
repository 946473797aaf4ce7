"""Quality metrics of a deformed mesh against its bind pose (used by `compare` and the tests).

- volume: signed volume by the divergence theorem, sum over triangles of v0 . (v1 x v2) / 6 (positive for a
  closed mesh with counter-clockwise outward faces); volume_ratio = deformed / bind.
- collapse: per point, the distance to the nearest posed bone segment divided by the same distance at bind;
  LBS candy-wrapper and elbow collapse show as a small minimum / 5th percentile.
- edge distortion: |l / l0 - 1| over edges (mean, max).
- normal smoothness around a joint: mean angle between the normals of faces sharing an interior edge, over
  the faces within `radius` of the joint at bind; a skinning crease raises it above the bind value.
`quality_report` collects them in one dict of floats.

Fold and quality metrics (issue 13), all against the bind pose where a reference is needed:
- intersecting triangle pairs: exact segment-through-triangle tests (two non-coplanar triangles meet iff an edge
  of one crosses the other), triangles sharing a vertex excluded, candidates from a uniform grid over the
  triangle bounding boxes (vectorised; a 1.3k-vertex tube takes a few ms).
- largest dihedral crease: the largest angle between the normals of two faces sharing an edge (0 = flat).
- shares of edges strained by more than 30 % and of interior edges whose dihedral angle changed by more than
  45 degrees (real-rig seam and dent detectors).
- roughness: per-vertex uniform Laplacian length |x_i - mean(neighbours)| against bind (rims, open shells).
- twist profile of a tube: per ring the rotation fitted to its offsets from the ring centre, the twist part
  (about the ring's axis) of the relative rotation between neighbouring rings.
- radius near a joint: distance to the nearest posed bone over the bind distance, for points near the joint.
`deformation_metrics` collects them for one primitive and one method (what `compare` calls).
"""
from __future__ import annotations

import numpy as np

from engine.math.numerics import quiet_underflow
from engine.skinning.binding.project import nearest_bone
from engine.skinning.types import Bones, bone_endpoints

__all__ = [
    "volume",
    "volume_ratio",
    "region_dihedral_change",
    "skeleton_distance",
    "collapse",
    "edge_distortion",
    "interior_edge_faces",
    "normal_smoothness",
    "quality_report",
    "mesh_edges",
    "candidate_pairs",
    "intersecting_pairs",
    "dihedral_angles",
    "max_crease",
    "dihedral_change_share",
    "strain_share",
    "laplacian_lengths",
    "roughness",
    "ring_rotations",
    "ring_twist",
    "radius_near_joint",
    "deformation_metrics",
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


# ---------------------------------------------------------------------------------------------------------
# fold and quality metrics (issue 13)
# ---------------------------------------------------------------------------------------------------------
def mesh_edges(triangles: np.ndarray) -> np.ndarray:
    """(E,2) unique undirected edges i < j of the triangles (degenerate edges dropped)."""
    tri = np.asarray(triangles).astype(np.int64).reshape(-1, 3)
    he = np.sort(tri[:, [[0, 1], [1, 2], [2, 0]]].reshape(-1, 2), axis=1)
    return np.unique(he[he[:, 0] != he[:, 1]], axis=0)


def _points(positions: np.ndarray, what: str = "positions") -> np.ndarray:
    p = np.asarray(positions, np.float64)
    if p.ndim != 2 or p.shape[1] != 3:
        raise ValueError(f"{what} must have shape (V,3), got {p.shape}")
    return p


def candidate_pairs(positions: np.ndarray, triangles: np.ndarray) -> np.ndarray:
    """(K,2) pairs (a < b) of triangles whose bounding boxes overlap, from a uniform grid over the boxes (cell =
    the median box extent; a box lands in every cell it overlaps). Pairs sharing a vertex are kept."""
    p = _points(positions)
    tri = _tri(triangles, p.shape[0])
    nt = tri.shape[0]
    if nt < 2:
        return np.zeros((0, 2), np.int64)
    corners = p[tri]
    lo, hi = corners.min(1), corners.max(1)
    ext = float(np.median((hi - lo).max(1)))
    if not ext > 0.0:
        ext = float(np.ptp(p, axis=0).max()) or 1.0
    origin = lo.min(0)
    c0 = np.floor((lo - origin) / ext).astype(np.int64)
    c1 = np.floor((hi - origin) / ext).astype(np.int64)
    span = c1 - c0 + 1
    count = span.prod(1)
    owner = np.repeat(np.arange(nt), count)
    local = np.arange(owner.shape[0]) - np.repeat(np.cumsum(count) - count, count)
    sx, sy = span[owner, 0], span[owner, 1]
    cell = c0[owner] + np.stack([local % sx, (local // sx) % sy, local // (sx * sy)], 1)
    dims = c1.max(0) + 1
    key = (cell[:, 0] * dims[1] + cell[:, 1]) * dims[2] + cell[:, 2]
    order = np.lexsort((owner, key))
    key, owner = key[order], owner[order]
    pairs = []
    d = 1
    while d < key.shape[0]:
        same = key[d:] == key[:-d]
        if not same.any():
            break
        pairs.append(np.stack([owner[:-d][same], owner[d:][same]], 1))
        d += 1
    if not pairs:
        return np.zeros((0, 2), np.int64)
    pr = np.sort(np.concatenate(pairs), axis=1)
    pr = pr[pr[:, 0] != pr[:, 1]]
    pr = np.unique(pr[:, 0] * nt + pr[:, 1])
    pr = np.stack([pr // nt, pr % nt], 1)
    a, b = pr[:, 0], pr[:, 1]
    overlap = np.all((lo[a] <= hi[b]) & (lo[b] <= hi[a]), axis=1)
    return pr[overlap]


def _orient(a: np.ndarray, b: np.ndarray, c: np.ndarray, d: np.ndarray) -> np.ndarray:
    """Signed volume (x6) of tetrahedra (a, b, c, d), rows."""
    return np.einsum("ij,ij->i", np.cross(b - a, c - a), d - a)


def _edges_cross(p: np.ndarray, q: np.ndarray, a: np.ndarray, b: np.ndarray, c: np.ndarray, eps: np.ndarray
                 ) -> np.ndarray:
    """Rows where segment pq passes strictly through the interior of triangle abc (touching does not count)."""
    dp, dq = _orient(a, b, c, p), _orient(a, b, c, q)
    crosses = ((dp > eps) & (dq < -eps)) | ((dp < -eps) & (dq > eps))
    s1, s2, s3 = _orient(p, q, a, b), _orient(p, q, b, c), _orient(p, q, c, a)
    inside = ((s1 > eps) & (s2 > eps) & (s3 > eps)) | ((s1 < -eps) & (s2 < -eps) & (s3 < -eps))
    return crosses & inside


@quiet_underflow
def intersecting_pairs(positions: np.ndarray, triangles: np.ndarray) -> np.ndarray:
    """(K,2) pairs of triangles that intersect, triangles sharing a vertex excluded (they meet by construction).

    Exact for non-coplanar triangles: two triangles intersect iff an edge of one crosses the other (each crossing
    is a proper one: touching within a relative 1e-12 of the local scale does not count). Coplanar overlaps are
    not reported (they do not arise from a deformation of a non-degenerate surface except by accident)."""
    p = _points(positions)
    tri = _tri(triangles, p.shape[0])
    pr = candidate_pairs(p, tri)
    if pr.shape[0] == 0:
        return pr
    ta, tb = tri[pr[:, 0]], tri[pr[:, 1]]
    share = (ta[:, :, None] == tb[:, None, :]).any(axis=(1, 2))
    pr, ta, tb = pr[~share], ta[~share], tb[~share]
    if pr.shape[0] == 0:
        return pr
    pa, pb = p[ta], p[tb]
    scale = np.maximum(np.ptp(pa, axis=1).max(1), np.ptp(pb, axis=1).max(1))
    eps = 1e-12 * scale ** 3
    hit = np.zeros(pr.shape[0], bool)
    for tri_e, tri_f in ((pa, pb), (pb, pa)):
        for i, j in ((0, 1), (1, 2), (2, 0)):
            hit |= _edges_cross(tri_e[:, i], tri_e[:, j], tri_f[:, 0], tri_f[:, 1], tri_f[:, 2], eps)
    return pr[hit]


@quiet_underflow
def dihedral_angles(positions: np.ndarray, triangles: np.ndarray, pairs: np.ndarray | None = None) -> np.ndarray:
    """Angle (radians, 0 = flat) between the normals of the two faces of every interior edge (`pairs` from
    `interior_edge_faces`); pairs with a degenerate face get 0."""
    p = _points(positions)
    tri = _tri(triangles, p.shape[0])
    pairs = interior_edge_faces(tri) if pairs is None else np.asarray(pairs, np.int64).reshape(-1, 2)
    n, ok = _face_unit_normals(p, tri)
    dots = np.clip(np.einsum("ij,ij->i", n[pairs[:, 0]], n[pairs[:, 1]]), -1.0, 1.0)
    return np.where(ok[pairs[:, 0]] & ok[pairs[:, 1]], np.arccos(dots), 0.0)


def max_crease(positions: np.ndarray, triangles: np.ndarray, mask: np.ndarray | None = None) -> float:
    """Largest dihedral crease in degrees over interior edges (optionally only pairs where `mask` (T,) holds for
    both faces). 180 is a face folded flat onto its neighbour."""
    tri = np.asarray(triangles)
    pairs = interior_edge_faces(tri)
    if mask is not None:
        m = np.asarray(mask, bool)
        pairs = pairs[m[pairs[:, 0]] & m[pairs[:, 1]]]
    ang = dihedral_angles(positions, tri, pairs)
    return float(np.degrees(ang.max())) if ang.size else 0.0


def dihedral_change_share(positions: np.ndarray, bind_positions: np.ndarray, triangles: np.ndarray,
                          threshold_deg: float = 45.0) -> float:
    """Share (0..1) of interior edges whose dihedral angle changed by more than threshold_deg against bind."""
    if not threshold_deg >= 0:
        raise ValueError(f"threshold_deg must be >= 0, got {threshold_deg!r}")
    pairs = interior_edge_faces(np.asarray(triangles))
    if pairs.shape[0] == 0:
        return 0.0
    d = np.abs(dihedral_angles(positions, triangles, pairs) - dihedral_angles(bind_positions, triangles, pairs))
    return float(np.mean(d > np.radians(threshold_deg)))


@quiet_underflow
def region_dihedral_change(positions: np.ndarray, reference: np.ndarray, triangles: np.ndarray,
                           vertices: np.ndarray) -> float:
    """Largest change in degrees of the dihedral angle, ``positions`` against ``reference`` (e.g. the same pose
    without a surface edit), over the interior edges whose two faces both touch ``vertices`` (e.g. an edit's
    passive region); 0 when there is no such edge. A fold or crumple shows as tens of degrees on one edge."""
    tri = np.asarray(triangles, np.int64)
    pairs = interior_edge_faces(tri)
    mark = np.zeros(max(int(tri.max()) + 1 if tri.size else 0, np.asarray(positions).shape[0]), bool)
    mark[np.asarray(vertices, np.int64)] = True
    touch = np.asarray(mark[tri].any(axis=1), bool)
    pairs = pairs[touch[pairs[:, 0]] & touch[pairs[:, 1]]]
    if pairs.shape[0] == 0:
        return 0.0
    d = np.abs(dihedral_angles(positions, tri, pairs) - dihedral_angles(reference, tri, pairs))
    return float(np.degrees(d.max()))


def strain_share(positions: np.ndarray, bind_positions: np.ndarray, edges: np.ndarray,
                 threshold: float = 0.3) -> float:
    """Share (0..1) of edges (E,2) with bind length > 0 whose length changed by more than `threshold` (relative)."""
    if not threshold >= 0:
        raise ValueError(f"threshold must be >= 0, got {threshold!r}")
    p, p0 = _points(positions), _points(bind_positions, "bind_positions")
    e = np.asarray(edges).astype(np.int64).reshape(-1, 2)
    l0 = np.linalg.norm(p0[e[:, 0]] - p0[e[:, 1]], axis=1)
    ok = l0 > 0
    if not ok.any():
        return 0.0
    l1 = np.linalg.norm(p[e[ok, 0]] - p[e[ok, 1]], axis=1)
    return float(np.mean(np.abs(l1 / l0[ok] - 1.0) > threshold))


def laplacian_lengths(positions: np.ndarray, edges: np.ndarray) -> np.ndarray:
    """(V,) |x_i - mean of its edge neighbours| (uniform Laplacian length); 0 for isolated points."""
    p = _points(positions)
    e = np.asarray(edges).astype(np.int64).reshape(-1, 2)
    n = p.shape[0]
    both = np.concatenate([e, e[:, ::-1]])
    deg = np.bincount(both[:, 0], minlength=n).astype(np.float64)
    acc = np.stack([np.bincount(both[:, 0], weights=p[both[:, 1], k], minlength=n) for k in range(3)], 1)
    mean = acc / np.maximum(deg, 1.0)[:, None]
    return np.where(deg > 0, np.linalg.norm(p - mean, axis=1), 0.0)


@quiet_underflow
def roughness(positions: np.ndarray, bind_positions: np.ndarray, edges: np.ndarray,
              mask: np.ndarray | None = None) -> dict:
    """Roughness against bind over the vertices of `mask` (all by default): the mean increase of the Laplacian
    length, max(0, L_i - L_i bind), over the mean bind edge length (0 = no wrinkling; a rigid motion gives 0)
    and its largest per-vertex value."""
    p, p0 = _points(positions), _points(bind_positions, "bind_positions")
    e = np.asarray(edges).astype(np.int64).reshape(-1, 2)
    inc = np.maximum(laplacian_lengths(p, e) - laplacian_lengths(p0, e), 0.0)
    if mask is not None:
        inc = inc[np.asarray(mask, bool)]
    h = float(np.linalg.norm(p0[e[:, 0]] - p0[e[:, 1]], axis=1).mean()) if e.size else 1.0
    if inc.size == 0 or not h > 0:
        return {"roughness": 0.0, "roughness_max": 0.0}
    return {"roughness": float(inc.mean() / h), "roughness_max": float(inc.max() / h)}


def _kabsch(a: np.ndarray, b: np.ndarray) -> np.ndarray:
    """Rotations (K,3,3) taking point offsets a (K,N,3) onto b (least squares)."""
    h = np.einsum("kni,knj->kij", a, b)
    u, _, vt = np.linalg.svd(h)
    d = np.sign(np.linalg.det(np.einsum("kij,kjl->kil", u, vt)))
    d = np.where(d == 0, 1.0, d)
    u[:, :, 2] *= d[:, None]
    return np.einsum("kij,kjl->kli", u, vt)  # (U V^T)^T = V U^T


def ring_rotations(positions: np.ndarray, bind_positions: np.ndarray, rings: np.ndarray
                   ) -> tuple[np.ndarray, np.ndarray]:
    """Per ring (labels 0..R-1 in `rings` (V,), -1 = none): the rotation fitted to the ring's offsets from its
    centre, bind -> posed (R,3,3), and the ring centres posed (R,3)."""
    p, p0 = _points(positions), _points(bind_positions, "bind_positions")
    lab = np.asarray(rings).astype(np.int64)
    if lab.shape != (p.shape[0],):
        raise ValueError(f"rings must have shape ({p.shape[0]},), got {lab.shape}")
    n_r = int(lab.max()) + 1 if lab.size else 0
    sizes = np.bincount(lab[lab >= 0], minlength=n_r)
    if n_r == 0 or sizes.min() < 3 or np.unique(sizes).size != 1:
        raise ValueError(f"rings must label every ring 0..R-1 with the same count (>= 3) of points, got {sizes}")
    order = np.argsort(lab[lab >= 0], kind="stable")
    idx = np.nonzero(lab >= 0)[0][order].reshape(n_r, -1)
    a, b = p0[idx], p[idx]
    ca, cb = a.mean(1, keepdims=True), b.mean(1, keepdims=True)
    return _kabsch(a - ca, b - cb), cb[:, 0]


def ring_twist(positions: np.ndarray, bind_positions: np.ndarray, rings: np.ndarray) -> dict:
    """Twist profile of a tube whose points are labelled by ring (see `ring_rotations`; rings ordered along the
    tube). The relative rotation of neighbouring rings is split into swing and twist about the ring axis (the
    bind axis of the tube at that ring, carried by the ring's rotation); returns the per-ring twist steps in
    degrees (R-1,), their cumulative sum (twist reaching each ring), the largest step and the total."""
    p0 = _points(bind_positions, "bind_positions")
    rot, _ = ring_rotations(positions, p0, rings)
    lab = np.asarray(rings).astype(np.int64)
    n_r = rot.shape[0]
    c0 = np.stack([p0[lab == k].mean(0) for k in range(n_r)])
    axis0 = np.gradient(c0, axis=0) if n_r > 1 else np.zeros((1, 3))
    axis0 /= np.maximum(np.linalg.norm(axis0, axis=1, keepdims=True), 1e-300)
    rel = np.einsum("kij,klj->kil", rot[1:], rot[:-1])  # R_{k+1} R_k^T
    ax = np.einsum("kij,kj->ki", rot[:-1], 0.5 * (axis0[1:] + axis0[:-1]))
    ax /= np.maximum(np.linalg.norm(ax, axis=1, keepdims=True), 1e-300)
    # rotation vector part along the axis from the quaternion of rel: twist = 2 atan2(q_v . n, q_w)
    w = 0.5 * np.sqrt(np.maximum(1.0 + np.trace(rel, axis1=1, axis2=2), 0.0))
    v = 0.25 * np.stack([rel[:, 2, 1] - rel[:, 1, 2], rel[:, 0, 2] - rel[:, 2, 0], rel[:, 1, 0] - rel[:, 0, 1]], 1)
    vn = np.einsum("ki,ki->k", v, ax)  # = sin(half) n.axis * ... (times 1/(4w)*4w, see below)
    # v = q_v * w (from the trace form), so q_v . n / q_w = vn / w^2
    step = np.degrees(2.0 * np.arctan2(vn, np.maximum(w * w, 1e-300)))
    return {"twist_steps": step, "twist_profile": np.concatenate([[0.0], np.cumsum(step)]),
            "twist_step_max": float(np.abs(step).max()) if step.size else 0.0,
            "twist_total": float(step.sum())}


def radius_near_joint(positions: np.ndarray, bind_positions: np.ndarray, bones: Bones, bind_joints: np.ndarray,
                      posed_joints: np.ndarray, joint: int, radius: float) -> float:
    """Smallest ratio (posed / bind) of the distance to the nearest bone over the points whose bind position lies
    within `radius` of joint `joint` (1 = no thinning; 0.9 = the limb narrows by 10 % at its thinnest)."""
    if not radius > 0:
        raise ValueError(f"radius must be > 0, got {radius!r}")
    p0 = _points(bind_positions, "bind_positions")
    bj = np.asarray(bind_joints, np.float64)
    if not (0 <= int(joint) < bj.shape[0]):
        raise ValueError(f"joint must be in [0, {bj.shape[0] - 1}], got {joint!r}")
    near = np.linalg.norm(p0 - bj[int(joint), :3, 3], axis=1) <= radius
    d0 = skeleton_distance(p0[near], bones, bj)
    d1 = skeleton_distance(_points(positions)[near], bones, posed_joints)
    ok = d0 > 1e-6 * max(float(d0.max(initial=0.0)), 1e-30)
    return float((d1[ok] / d0[ok]).min()) if ok.any() else 1.0


def deformation_metrics(positions: np.ndarray, bind_positions: np.ndarray, triangles: np.ndarray, *,
                        rings: np.ndarray | None = None, boundary: np.ndarray | None = None) -> dict:
    """The fold and quality metrics of one deformed primitive against its bind pose, a flat dict:
    intersecting_pairs (int), crease_max (deg), dihedral_change_45 and strain_30 (shares 0..1), volume_ratio
    (nan for an open mesh with zero bind volume), roughness / roughness_max (all vertices) and, when
    `boundary` (V,) bool is given, roughness_rim over those vertices; with `rings` (tube ring labels) also
    twist_step_max and twist_total (deg). positions / bind_positions are the welded control points (V,3)
    and triangles index them (so faces meeting at a welded seam count as neighbours)."""
    p, p0 = _points(positions), _points(bind_positions, "bind_positions")
    if p.shape != p0.shape:
        raise ValueError(f"positions {p.shape} and bind_positions {p0.shape} differ")
    tri = _tri(triangles, p.shape[0])
    edges = mesh_edges(tri)
    v0 = volume(p0, tri)
    out = {
        "intersecting_pairs": int(intersecting_pairs(p, tri).shape[0]),
        "crease_max": max_crease(p, tri),
        "dihedral_change_45": dihedral_change_share(p, p0, tri),
        "strain_30": strain_share(p, p0, edges),
        "volume_ratio": volume(p, tri) / v0 if abs(v0) > 0 else float("nan"),
    }
    out.update(roughness(p, p0, edges))
    if boundary is not None:
        out["roughness_rim"] = roughness(p, p0, edges, boundary)["roughness"]
    if rings is not None:
        tw = ring_twist(p, p0, rings)
        out["twist_step_max"], out["twist_total"] = tw["twist_step_max"], tw["twist_total"]
    return out
