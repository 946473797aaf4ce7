"""Rest state of the spring deformer, recorded once at bind (the research's "initialisation step").

`build_rest` flattens the CSR adjacency into slots (`csr_slots`) and records per slot and per vertex the bind
lengths, angles and torsion coefficients the springs return to, the Gershgorin coefficients of step limiting
(`lambda_columns`), the joint-blend weights (`joint_blend_weights`, per mesh piece: `mesh_islands`) and the
volume term's bone regions (`volume_rest`: bind volume and area per region, `fan_volumes`, `region_volumes`;
which points it acts on per frame: `volume_points`). See docs/springs.md.
"""
from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np
from scipy.sparse import coo_matrix
from scipy.sparse.csgraph import connected_components

from engine.skinning.springs.editterms import EditTerms
from engine.skinning.springs.params import (
    DIFF_FULL,
    DIFF_POWER,
    JOINT_BLEND,
    RIGID_WEIGHT,
    S_FLOOR,
    VOLUME_MIN_POINTS,
    VOLUME_MIN_RATIO,
    SpringParams,
)
from engine.skinning.springs.touch import glue, touching_points
from engine.skinning.springs.vec import _angle, _norm, _unit
from engine.skinning.types import Binding, MeshTopology, bone_endpoints

__all__ = [
    "SpringRest", "csr_slots", "build_rest", "slot_third_corners", "fan_volumes", "region_volumes", "volume_rest",
    "mesh_islands", "joint_blend_weights", "lambda_columns", "volume_acts", "edited_regions", "volume_points",
    "rigid_points", "diff_weights", "diff_scales", "diff_share", "ring_means", "mean_edge_lengths",
]


@dataclass
class SpringRest:
    """Rest state recorded at bind (the spring deformer's "initialisation step"), all float64.

    rows, cols (H,)  CSR slots: vertex rows[h] sees neighbour cols[h] (rows sorted; H = sum adj_count)
    rest_len   (H,)  bind edge length |v_j - v_i|
    rest_dlen  (H,)  bind |s_i| - |s_j|
    rest_angle (H,)  bind angle between s_i and s_j (radians, [0, pi])
    w_t        (H,)  torsion pair coefficient min(r_i, r_j)^2
    r          (V,)  bind |s_i|
    bone_angle (V,)  bind angle between s_i and its bone direction (cone mode); frame mode uses 0
    s_dir      (V,3) bind unit scale vectors (frame mode reference, carried by the bone rotation)
    s_floor    (V,)  floor of |s_i| in denominators
    degree     (V,)  neighbour count
    lam_cols   (V,4) Gershgorin coefficients per unit stiffness, columns as LAMBDA_COLUMNS (`lambda_columns`)
    blend_other (V,) joint blending: the bone across the nearer interior joint, -1 for none
    blend_end   (V,) 0 when that joint is the parent end of the vertex's bone, 1 the child end
    blend_w     (V,) own weight in [1/2, 1] (1: no blending)
    vol_third   (H,) volume term: the third corner m of the face (rows[h], cols[h], m) in winding order, -1 none
    vol_region  (V,) volume term: the vertex's bone region (its binding bone), -1 where the region is off
    vol_v0      (R,) bind skeleton-relative volume of each bone region (`fan_volumes` summed)
    vol_s0      (R,) bind surface area of each bone region (3 sum |G_i|, `fan_volumes`)
    rigid_bone  (V,) rigid points (`rigid_points`): the bone whose parent joint carries the point rigidly, -1 free
    rigid_offset (V,3) rigid points: bind position minus that joint's bind position
    diff_w     (H,)  differential term: slot weight 1 / rest_len^2 (`diff_weights`; 0 for a zero-length edge)
    diff_scale (V,)  differential term: the share of k_d acting on the point (`diff_scales`)
    diff0      (V,3) differential term: bind x_i minus the weighted mean of its one-ring (`ring_means`)
    touch_corners (V,3) glued points (springs.touch): the corners of the face the point touched at bind, -1 rows
                     for a free point
    touch_bary (V,3) glued points: the barycentrics of the face's closest point at bind
    touch_local (V,3) glued points: the bind offset from that point in the face's frame (`touch.face_frames`)
    """

    rows: np.ndarray
    cols: np.ndarray
    rest_len: np.ndarray
    rest_dlen: np.ndarray
    rest_angle: np.ndarray
    w_t: np.ndarray
    r: np.ndarray
    bone_angle: np.ndarray
    s_dir: np.ndarray
    s_floor: np.ndarray
    degree: np.ndarray
    tiny: float
    lam_cols: np.ndarray = field(default_factory=lambda: np.zeros((0, 4)))
    blend_other: np.ndarray = field(default_factory=lambda: np.zeros(0, np.int64))
    blend_end: np.ndarray = field(default_factory=lambda: np.zeros(0, np.int64))
    blend_w: np.ndarray = field(default_factory=lambda: np.zeros(0))
    vol_third: np.ndarray = field(default_factory=lambda: np.zeros(0, np.int64))
    vol_region: np.ndarray = field(default_factory=lambda: np.zeros(0, np.int64))
    vol_v0: np.ndarray = field(default_factory=lambda: np.zeros(0))
    vol_s0: np.ndarray = field(default_factory=lambda: np.zeros(0))
    rigid_bone: np.ndarray = field(default_factory=lambda: np.zeros(0, np.int64))
    rigid_offset: np.ndarray = field(default_factory=lambda: np.zeros((0, 3)))
    diff_w: np.ndarray = field(default_factory=lambda: np.zeros(0))
    diff_scale: np.ndarray = field(default_factory=lambda: np.zeros(0))
    diff0: np.ndarray = field(default_factory=lambda: np.zeros((0, 3)))
    touch_corners: np.ndarray = field(default_factory=lambda: np.zeros((0, 3), np.int64))
    touch_bary: np.ndarray = field(default_factory=lambda: np.zeros((0, 3)))
    touch_local: np.ndarray = field(default_factory=lambda: np.zeros((0, 3)))

    @property
    def n_vertices(self) -> int:
        return int(self.r.shape[0])

    @property
    def held(self) -> np.ndarray | None:
        """(V,) bool: the rigid points (held at their joint's rigid motion), None when there are none."""
        if self.rigid_bone.shape[0] != self.n_vertices or not np.any(self.rigid_bone >= 0):
            return None
        return self.rigid_bone >= 0

    @property
    def glued(self) -> np.ndarray | None:
        """(V,) bool: the points glued to a face they touched at bind (springs.touch), None when there are none."""
        if self.touch_corners.shape[0] != self.n_vertices or not np.any(self.touch_corners[:, 0] >= 0):
            return None
        return self.touch_corners[:, 0] >= 0

    @property
    def pinned(self) -> np.ndarray | None:
        """(V,) bool: the points no force moves (rigid or glued), None when there are none."""
        held, glued = self.held, self.glued
        if held is None or glued is None:
            return held if glued is None else glued
        return held | glued

    def glue(self, x: np.ndarray, src: np.ndarray | None = None) -> np.ndarray:
        """x with the glued points set on their faces' corners in src (None: x; `touch.glue`); x itself when there
        are none."""
        if self.glued is None:
            return x
        return glue(x, self.touch_corners, self.touch_bary, self.touch_local, src)


def csr_slots(adj_offset: np.ndarray, adj_count: np.ndarray, adj_index: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Flatten CSR adjacency into slot arrays (rows, cols): slot h is vertex rows[h] seeing cols[h]."""
    count = np.asarray(adj_count, np.int64)
    rows = np.repeat(np.arange(count.shape[0], dtype=np.int64), count)
    start = np.cumsum(count) - count
    local = np.arange(rows.shape[0], dtype=np.int64) - np.repeat(start, count)
    flat = np.asarray(adj_offset, np.int64)[rows] + local
    return rows, np.asarray(adj_index, np.int64)[flat]


def build_rest(topology: MeshTopology, binding: Binding, bind_joints: np.ndarray, *,
               joints: np.ndarray | None = None, weights: np.ndarray | None = None) -> SpringRest:
    """Record the bind-pose rest state: edge lengths, scale-vector lengths and angles, bone angles; with the
    skin's joints/weights ((D,4) or (V,4)) also the rigid points (`rigid_points`)."""
    x = np.asarray(topology.positions, np.float64)
    s = np.asarray(binding.scale, np.float64)
    diag = float(np.linalg.norm(x.max(0) - x.min(0))) if x.shape[0] else 1.0
    tiny = 1e-12 * max(diag, 1e-30)
    rows, cols = csr_slots(topology.adj_offset, topology.adj_count, topology.adj_index)
    shat, r, nz = _unit(s, tiny)
    theta, _, _ = _angle(shat[rows], shat[cols])
    p, c = bone_endpoints(binding.bones, np.asarray(bind_joints, np.float64))
    bdir, _, _ = _unit((c - p).astype(np.float64), tiny)
    bone_angle, _, _ = _angle(shat, bdir[binding.bone])
    rmin = np.minimum(r[rows], r[cols])
    rest = SpringRest(
        rows=rows, cols=cols,
        rest_len=_norm(x[cols] - x[rows]),
        rest_dlen=r[rows] - r[cols],
        rest_angle=theta,
        w_t=rmin * rmin,
        r=r,
        bone_angle=np.where(nz, bone_angle, 0.0),
        s_dir=shat,
        s_floor=np.maximum(S_FLOOR * r, tiny),
        degree=np.asarray(topology.adj_count, np.int64),
        tiny=tiny,
    )
    rest.lam_cols = lambda_columns(rest)
    rest.diff_w = diff_weights(rest.rest_len)
    rest.diff0 = x - ring_means(x, rest)
    rest.diff_scale = diff_scales(rest)
    rest.blend_other, rest.blend_end, rest.blend_w = joint_blend_weights(binding, bind_joints, r,
                                                                         mesh_islands(topology))
    volume_rest(rest, topology, binding)
    if joints is not None and weights is not None:
        rest.rigid_bone, rest.rigid_offset = rigid_points(topology, binding, bind_joints, joints, weights)
    free = None if rest.held is None else ~rest.held
    rest.touch_corners, rest.touch_bary, rest.touch_local = touching_points(x, topology.triangles,
                                                                            mean_edge_lengths(rest), free)
    return rest


def mean_edge_lengths(rest: SpringRest) -> np.ndarray:
    """(V,) per point the mean bind length of its edges (0 for a point without edges)."""
    n = rest.n_vertices
    count = np.bincount(rest.rows, minlength=n).astype(np.float64)
    return np.bincount(rest.rows, weights=rest.rest_len, minlength=n) / np.maximum(count, 1.0)


def diff_weights(rest_len: np.ndarray) -> np.ndarray:
    """(H,) slot weights of the differential term's one-ring mean: 1 / bind edge length^2 (a short edge weighs
    more, so a fine strip beside a coarse one keeps its own shape; scale-free once normalised), 0 for a
    zero-length edge."""
    rest_len = np.asarray(rest_len, np.float64)
    out = np.zeros(rest_len.shape[0])
    ok = rest_len > 0.0
    out[ok] = 1.0 / (rest_len[ok] * rest_len[ok])
    return out


def diff_scales(rest: SpringRest) -> np.ndarray:
    """(V,) per point the share of k_d the differential term applies: min(1, (h_i / (DIFF_FULL r_i))^DIFF_POWER),
    h_i the mean bind length of its edges, r_i its bind distance |s_i| from its bone (1 on the bone and for a point
    without edges). Where one edge spans the limb's radius (coarse game rigs) a quad folds along its diagonal without
    changing a length, and the term acts fully; where the limb is sampled finely the scale vectors already place
    every point and the term would only resist smooth bends and twists (docs/springs.md, "The differential term's
    share")."""
    n = rest.n_vertices
    count = np.bincount(rest.rows, minlength=n)
    h = mean_edge_lengths(rest)
    out = np.ones(n)
    ok = (rest.r > rest.tiny) & (count > 0)
    out[ok] = np.minimum(1.0, (h[ok] / (DIFF_FULL * rest.r[ok])) ** DIFF_POWER)
    return out


def diff_share(rest: SpringRest) -> np.ndarray:
    """(V,) rest.diff_scale, or ones where the rest state has none (one built by hand)."""
    return rest.diff_scale if rest.diff_scale.shape[0] == rest.n_vertices else np.ones(rest.n_vertices)


def ring_means(x: np.ndarray, rest: SpringRest, neighbours: np.ndarray | None = None) -> np.ndarray:
    """(V,3) per point the mean of its one-ring's positions x weighted by rest.diff_w (its own position where it
    has no weighted neighbour: no differential force there). neighbours: the CSR slots' neighbour positions (H,3)
    when they are not x's own (a tiled block's frozen halo, springs.tiles)."""
    n = rest.n_vertices
    x = np.asarray(x, np.float64)
    w = rest.diff_w
    xc = x[rest.cols] if neighbours is None else neighbours
    total = np.bincount(rest.rows, weights=w, minlength=n)
    s = np.stack([np.bincount(rest.rows, weights=w * xc[:, a], minlength=n) for a in range(3)], 1)
    ok = total > 0.0
    out = x.copy()
    out[ok] = s[ok] / total[ok, None]
    return out


def rigid_points(topology: MeshTopology, binding: Binding, bind_joints: np.ndarray, joints: np.ndarray,
                 weights: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Where the rig says rigid (issue 26, item 2): per control point (bone or -1, offset (V,3)).

    A point is bound to one joint when its largest skin weight is at least RIGID_WEIGHT. A whole connected
    shell (`mesh_islands`) whose points are all bound to one and the same joint (a panel, a button, a ball
    joint, teeth) moves rigidly under LBS: its points are held at that joint's rigid motion, P'_j + R_j (v - P_j)
    (R_j the polar rotation of the joint, `joint_rotations`), instead of being solved: the springs act where LBS
    blends. The joint's motion is read from a bone starting at it (its records carry P'_j and R_j, on the GPU
    too); a joint without one holds nothing. Derived from the weights and the shells alone: no per-asset
    switch."""
    from engine.skinning.binding.pipeline import per_control

    n = topology.n_control
    bone = np.full(n, -1, np.int64)
    offset = np.zeros((n, 3))
    if n == 0:
        return bone, offset
    jn = np.asarray(per_control(topology, np.asarray(joints)), np.int64)
    w = np.asarray(per_control(topology, np.asarray(weights)), np.float64)
    top = np.argmax(w, axis=1)
    dom = jn[np.arange(n), top]
    single = w[np.arange(n), top] >= RIGID_WEIGHT * np.maximum(w.sum(1), 1e-30)
    island = mesh_islands(topology)
    n_isl = int(island.max()) + 1
    # a shell is rigid when every point is single-bound to the joint of its first point
    first = np.full(n_isl, -1, np.int64)
    first[island[::-1]] = dom[::-1]
    same = single & (dom == first[island])
    rigid_shell = np.bincount(island, weights=~same, minlength=n_isl) == 0
    held = rigid_shell[island]
    pj = np.asarray(binding.bones.parent_joint, np.int64)
    n_joints = np.asarray(bind_joints).shape[0]
    bone_of_joint = np.full(n_joints, -1, np.int64)
    for b in range(pj.shape[0] - 1, -1, -1):  # set-up only: the first bone starting at each joint
        bone_of_joint[pj[b]] = b
    ok = held & (dom >= 0) & (dom < n_joints)
    bone[ok] = bone_of_joint[dom[ok]]
    has = bone >= 0
    x = np.asarray(topology.positions, np.float64)
    bj = np.asarray(bind_joints, np.float64)
    offset[has] = x[has] - bj[pj[bone[has]], :3, 3]
    return bone, offset


def slot_third_corners(topology: MeshTopology, rows: np.ndarray, cols: np.ndarray) -> np.ndarray:
    """(H,) per CSR slot (i, j): the third corner m of the face (i, j, m) in winding order, -1 where no face has
    the directed edge i -> j (a boundary, or a face of the other winding). Each face appears once per corner, so
    summing over a vertex's slots visits each of its faces once; a directed edge shared by two faces (non-manifold
    or inconsistent winding) keeps the first."""
    tri = np.asarray(topology.triangles, np.int64).reshape(-1, 3)
    n = int(topology.n_control)
    out = np.full(rows.shape[0], -1, np.int64)
    if tri.shape[0] == 0 or rows.shape[0] == 0:
        return out
    i = np.concatenate([tri[:, 0], tri[:, 1], tri[:, 2]])
    j = np.concatenate([tri[:, 1], tri[:, 2], tri[:, 0]])
    m = np.concatenate([tri[:, 2], tri[:, 0], tri[:, 1]])
    ok = (i != j) & (j != m) & (i != m)
    key = i[ok] * n + j[ok]
    keys = rows * n + cols
    order = np.argsort(keys, kind="stable")
    pos = np.searchsorted(keys[order], key)
    pos = np.minimum(pos, keys.shape[0] - 1)
    hit = keys[order][pos] == key
    slot = order[pos[hit]]
    third = m[ok][hit]
    first = np.unique(slot, return_index=True)[1]  # the first face of each directed edge
    out[slot[first]] = third[first]
    return out


def fan_volumes(x: np.ndarray, attach: np.ndarray, rest: SpringRest,
                corners: tuple[np.ndarray, np.ndarray] | None = None) -> tuple[np.ndarray, np.ndarray]:
    """Per vertex i (V_i, G_i): its share of its bone region's skeleton-relative volume, V_i = sum over its faces
    (i, j, m) of det(x_i - a_i, x_j - a_i, x_m - a_i) / 18 (the tetrahedra from its own attachment a_i; each face
    is counted by its three corners, hence 18 = 6 x 3), and G_i = dV_i / dx_i = sum (x_j - a_i) x (x_m - a_i) / 18,
    whose direction is the vertex's outward normal and 3 |G_i| its share of the surface area.

    corners: the positions of every face slot's (vol_third >= 0) two other corners (x_j, x_m) when they are not
    x's own (a tiled block's frozen halo, springs.tiles)."""
    n = x.shape[0]
    h = rest.vol_third >= 0
    i, j, m = rest.rows[h], rest.cols[h], rest.vol_third[h]
    ai = attach[i]
    xj, xm = (x[j], x[m]) if corners is None else corners
    c = np.cross(xj - ai, xm - ai)
    det = np.einsum("ij,ij->i", x[i] - ai, c)
    v = np.bincount(i, weights=det, minlength=n) / 18.0
    g = np.stack([np.bincount(i, weights=c[:, k], minlength=n) for k in range(3)], 1) / 18.0
    return v, g


def region_volumes(x: np.ndarray, attach: np.ndarray, rest: SpringRest) -> np.ndarray:
    """(R,) skeleton-relative volume of every bone region at positions x (0 for the regions that are off)."""
    v, _ = fan_volumes(x, attach, rest)
    on = rest.vol_region >= 0
    return np.bincount(rest.vol_region[on], weights=v[on], minlength=rest.vol_v0.shape[0])


def volume_rest(rest: SpringRest, topology: MeshTopology, binding: Binding) -> None:
    """Set up the volume term in `rest`: slot third corners, bind volume and area per bone region, and which
    regions take part (|V0_r| > VOLUME_MIN_RATIO S0_r^1.5)."""
    rest.vol_third = slot_third_corners(topology, rest.rows, rest.cols)
    n = rest.n_vertices
    bone = np.asarray(binding.bone, np.int64)
    n_reg = int(binding.bones.count) if n else 0
    rest.vol_region = np.full(n, -1, np.int64)
    rest.vol_v0 = np.zeros(n_reg)
    rest.vol_s0 = np.zeros(n_reg)
    if n == 0 or n_reg == 0:
        return
    x = np.asarray(topology.positions, np.float64)
    v, g = fan_volumes(x, np.asarray(binding.attach, np.float64), rest)
    # one shell per region: the shell with the most points on the bone (the skin); the points of other shells on
    # that bone (clothing over the skin, a panel beside it) get no pressure, so shells that overlap at rest do not
    # pull each other through a shared volume
    island = mesh_islands(topology)
    pair = bone * (int(island.max()) + 1) + island
    count = np.bincount(pair)
    order = np.lexsort((-count[pair], bone))  # per bone, its points of the most populated shell first
    main_island = np.full(n_reg, -1, np.int64)
    main_island[bone[order[::-1]]] = island[order[::-1]]
    main = island == main_island[bone]
    rest.vol_v0 = np.bincount(bone, weights=v * main, minlength=n_reg)
    rest.vol_s0 = 3.0 * np.bincount(bone, weights=_norm(g) * main, minlength=n_reg)
    points = np.bincount(bone, weights=main, minlength=n_reg)
    on = (rest.vol_s0 > 0.0) & (np.abs(rest.vol_v0) > VOLUME_MIN_RATIO * rest.vol_s0 ** 1.5) & \
        (points >= VOLUME_MIN_POINTS)
    rest.vol_region = np.where(on[bone] & main, bone, -1)


def mesh_islands(topology: MeshTopology) -> np.ndarray:
    """(V,) label of the connected piece (over the mesh edges) every control point belongs to."""
    v = topology.n_control
    e = np.asarray(topology.edges, np.int64).reshape(-1, 2)
    graph = coo_matrix((np.ones(e.shape[0], np.int8), (e[:, 0], e[:, 1])), shape=(v, v))
    return np.asarray(connected_components(graph, directed=False)[1], np.int64)


def joint_blend_weights(binding: Binding, bind_joints: np.ndarray, r: np.ndarray, island: np.ndarray | None = None
                        ) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Per vertex (other bone or -1, joint end 0 = parent / 1 = child, own weight) of joint blending.

    The nearer end of a vertex's bone is an interior joint when another bone ends there (parent end: a bone whose
    child joint is this bone's parent joint; child end: exactly one bone starting at the child joint). A vertex at
    distance d from that joint along its bone, with rho = min(JOINT_BLEND median_r, half the bone) (median_r: the
    median bind |s| of the points bound to the bone), gets the own weight w = 1/2 + 1/2 smoothstep(d / rho) (1 at
    and past rho).

    island (V,): mesh piece labels (`mesh_islands`). A vertex blends only when its piece also has points bound to
    the bone across the joint: a separate piece bound to one bone (a rigid panel, a shell ending before the
    joint) follows its bone rigidly, as LBS keeps it, instead of being bent by a joint it does not span."""
    bones = binding.bones
    nb = bones.count
    p, c = bone_endpoints(bones, np.asarray(bind_joints, np.float64))
    length = _norm((c - p).astype(np.float64))
    pj, cj = np.asarray(bones.parent_joint), np.asarray(bones.child_joint)
    parent_bone = np.full(nb, -1, np.int64)
    child_bone = np.full(nb, -1, np.int64)
    for k in range(nb):  # set-up only, per bone
        m = np.nonzero((cj == pj[k]) & (cj >= 0))[0]
        if m.size:
            parent_bone[k] = m[0]
        if cj[k] >= 0:
            m = np.nonzero(pj == cj[k])[0]
            if m.size == 1:
                child_bone[k] = m[0]
    b = np.asarray(binding.bone, np.int64)
    t = np.asarray(binding.t, np.float64)
    end = (t >= 0.5).astype(np.int64)
    other = np.where(end == 0, parent_bone[b], child_bone[b])
    d = np.where(end == 0, t, 1.0 - t) * length[b]
    # one blend length per bone, from the median bind |s| of its points: every point at one distance from the
    # joint turns by one share, whatever its own offset, so shells over one another (clothing over the skin)
    # bend along the same curve and keep their offset, and a flattened cross-section turns as one ring
    rr = np.asarray(r, np.float64)
    rmed = np.zeros(nb)
    for k in np.unique(b):  # set-up only, per bone
        rk = rr[(b == k) & (rr > 0.0)]
        rmed[k] = float(np.median(rk)) if rk.size else 0.0
    rho = np.minimum(JOINT_BLEND * rmed[b], 0.5 * length[b])
    u = np.clip(d / np.where(rho > 0, rho, 1.0), 0.0, 1.0)
    spans = other >= 0
    if island is not None:  # the vertex's piece has points on the other bone
        lab = np.asarray(island, np.int64)
        present = np.unique(lab * nb + b)
        spans &= np.isin(lab * nb + np.where(other >= 0, other, 0), present)
    w = np.where(spans & (rho > 0), 0.5 + 0.5 * u * u * (3.0 - 2.0 * u), 1.0)
    other = np.where(w < 1.0, other, -1)
    return other, end, w


def lambda_columns(rest: SpringRest) -> np.ndarray:
    """(V,4) per-vertex Gershgorin bounds of the force Jacobian per unit stiffness (linearised at bind), one
    column per group of LAMBDA_COLUMNS: edge/length springs 2 deg_i (each neighbour adds k on the diagonal and
    k off it), torsion sum_j w_ij (1/r_i^2 + 1/(r_i r_j)), bone (r_i / max(r_i, s_floor_i))^2 (1, or 0 for a
    vertex on its bone), radial 1 (r_i: bind |s_i| floored like the force denominators). The surface-edit term
    k_e K_i changes per frame and is added by `lambda_per_vertex`."""
    n = rest.n_vertices
    sref = np.maximum(rest.r, rest.s_floor)
    deg2 = 2.0 * rest.degree.astype(np.float64)
    tor = rest.w_t * (1.0 / sref[rest.rows] ** 2 + 1.0 / (sref[rest.rows] * sref[rest.cols]))
    return np.stack([deg2, np.bincount(rest.rows, weights=tor, minlength=n), (rest.r / sref) ** 2,
                     np.ones(n)], 1)


def volume_acts(params: SpringParams) -> bool:
    """Whether the volume term runs: k_v on and not the energy scheme (the term is a pressure with no energy to
    descend; that scheme accepts descending steps only)."""
    return bool(params.stiffness("k_v")) and params.convergence != "energy"


def edited_regions(region: np.ndarray, stiffness: np.ndarray, held: np.ndarray | None) -> np.ndarray:
    """Volume regions (sorted, unique) holding a surface-edit handle (K_i > 0) or a held vertex: the volume term
    leaves them alone (an edit changes the volume on purpose: a bulge, a breathing chest; the pressure would
    deflate the rest of the region to undo it). region (V,) as SpringRest.vol_region."""
    touched = np.asarray(stiffness) > 0.0
    if held is not None:
        touched = touched | (np.asarray(held) > 0)
    return np.unique(region[touched & (region >= 0)])


def volume_points(rest: SpringRest, params: SpringParams, edit: EditTerms | None) -> np.ndarray:
    """(V,) bool: the points the volume term acts on (their region takes part and no acting edit touches it)."""
    region = rest.vol_region if rest.vol_region.shape[0] == rest.n_vertices else np.full(rest.n_vertices, -1)
    on = region >= 0
    if not volume_acts(params):
        return np.zeros_like(on)
    if edit is not None and params.stiffness("k_e"):
        on &= ~np.isin(region, edited_regions(region, edit.stiffness, edit.held))
    return on
