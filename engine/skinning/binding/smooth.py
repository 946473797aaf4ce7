"""Smoothing a binding (`smooth_binding`): Laplacian smoothing of the attachments in tree coordinates of the
skeleton around the gaps, then reprojection onto the bone tree, a few passes (< 10)."""
from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import scipy.sparse as sp
import scipy.sparse.linalg as spla

from engine.math.numerics import quiet_underflow
from engine.skinning.binding.bones import _check_skeleton, _scale_of, joint_location_groups
from engine.skinning.binding.project import _attach, _check_allowed, make_binding
from engine.skinning.binding.quality import DEFAULT_GAP_THRESHOLD, _edge_lengths, _edge_ratio
from engine.skinning.types import Binding, Bones, MeshTopology, bone_endpoints

__all__ = ["MAX_SMOOTH_PASSES", "smooth_binding"]

MAX_SMOOTH_PASSES = 9
"""The research keeps smoothing below 10 passes: more drags attachments near leaf bones together."""
_REGION_RINGS = 2.0
"""Rings smoothed around a gap per unit of (ratio / threshold) on the first pass (x (1 + pass) later)."""
_SCREEN = 1e-3
"""Weak pull of the smoothed tree coordinates towards their previous values (relative to the Laplacian
diagonal): keeps the smoothing solve well posed where a whole mesh component lies in the smoothed region."""


# ----------------------------------------------------------------------------------------------------------
# the skeleton as a tree of bones: coordinates for smoothing, and reprojection


@dataclass(frozen=True)
class _SkeletonTree:
    """The bones as a rooted tree of segments, the space in which `smooth_binding` smooths.

    Every bone has its own segment; siblings (bones leaving one joint location) that stay closer together
    than `merge_gap` over a stretch share that stretch as one trunk segment: siblings move rigidly together,
    so moving an attachment from one to the other there costs no more than that distance. Bone k runs over
    trunk[k] (length offset[k], -1 when none) and then own[k].

    length (S,) segment lengths; kids (S+1, K) child segments of every segment, row S: the root segments,
    -1 padded; anc (S,S) 1.0 where column s is a strict ancestor of row r; levels: segments by depth;
    seg_bone (S,) the bone of an own segment (-1 for a trunk); bone_length (B,).
    """

    length: np.ndarray
    kids: np.ndarray
    anc: np.ndarray
    levels: tuple[np.ndarray, ...]
    seg_bone: np.ndarray
    own: np.ndarray
    trunk: np.ndarray
    offset: np.ndarray
    bone_length: np.ndarray


def _skeleton_tree(
    bones: Bones, bind_joints: np.ndarray, parents: np.ndarray | None, eps: float, merge_gap: float
) -> _SkeletonTree:
    """The segment tree of `bones` (see `_SkeletonTree`); eps joins coincident joints (with parents)."""
    bj = np.asarray(bind_joints, np.float64)
    p, c = bone_endpoints(bones, bj)
    p, c = p.astype(np.float64), c.astype(np.float64)
    length = np.linalg.norm(c - p, axis=1)
    nb = bones.count
    j = bj.shape[0]
    pj = bones.parent_joint.astype(np.int64)
    cj = bones.child_joint.astype(np.int64)
    if nb and (pj.min() < 0 or pj.max() >= j or cj.max() >= j):
        raise ValueError(f"bones reference joints outside [0, {j - 1}]")
    top = joint_location_groups(bj, parents, eps) if parents is not None else np.arange(j)
    incoming = np.full(j, -1, np.int64)  # the bone arriving at each joint location
    inner = np.nonzero(cj >= 0)[0]
    incoming[top[cj[inner]]] = inner
    parent = incoming[top[pj]]
    # siblings whose points at equal distance from the joint stay within merge_gap of each other over a
    # stretch share it; clusters grow by complete linkage, so every pair in a trunk keeps to merge_gap
    # (set-up only: a few bones per joint)
    u = (c - p) / np.maximum(length, 1e-30)[:, None]
    cluster = np.arange(nb)
    trunk_len = np.full(nb, np.inf)
    group = top[pj]
    for g in np.unique(group):
        sib = np.nonzero(group == g)[0]
        if sib.size < 2:
            continue
        half = 0.5 * np.linalg.norm(u[sib][:, None] - u[sib][None, :], axis=2)  # sin(angle / 2)
        reach = np.full(half.shape, np.inf)
        np.divide(merge_gap, 2.0 * half, out=reach, where=half > 0)
        reach = np.minimum(reach, np.minimum(length[sib][:, None], length[sib][None, :]))
        a, b = np.triu_indices(sib.size, 1)
        for q in np.argsort(-reach[a, b], kind="stable"):
            ca, cb = cluster[sib[a[q]]], cluster[sib[b[q]]]
            if ca == cb:
                continue
            ma, mb = cluster[sib] == ca, cluster[sib] == cb
            cross = float(reach[np.ix_(ma, mb)].min())
            if cross > merge_gap:
                trunk_len[cb] = min(trunk_len[ca], trunk_len[cb], cross)
                cluster[cluster == ca] = cb
    roots, inv = np.unique(cluster, return_inverse=True)
    size = np.bincount(inv)
    merged = size[inv] > 1
    offset = np.where(merged, trunk_len[cluster], 0.0)
    offset = np.where(merged, np.minimum(offset, length), 0.0)
    # segments: 0..B-1 the bones' own parts, then one trunk per merged cluster
    trunk_ids = np.nonzero(size > 1)[0]
    trunk_of_cluster = np.full(roots.shape[0], -1, np.int64)
    trunk_of_cluster[trunk_ids] = nb + np.arange(trunk_ids.size)
    trunk = np.where(merged, trunk_of_cluster[inv], -1)
    ns = nb + trunk_ids.size
    seg_len = np.zeros(ns)
    seg_len[:nb] = length - offset
    seg_parent = np.where(merged, trunk, parent)
    first = np.zeros(ns, np.int64)  # one member of each trunk, for the trunk's own length and parent
    first[trunk[merged]] = np.nonzero(merged)[0]
    seg_len[nb:] = offset[first[nb:]]
    seg_parent = np.concatenate([seg_parent, parent[first[nb:]]])
    seg_bone = np.concatenate([np.arange(nb), np.full(ns - nb, -1)])

    depth = np.zeros(ns, np.int64)
    for _ in range(ns + 1):  # depth = number of ancestors, vectorised over segments; bounded by S
        new = np.where(seg_parent >= 0, depth[np.maximum(seg_parent, 0)] + 1, 0)
        if np.array_equal(new, depth):
            break
        depth = new
    else:
        raise ValueError("the bones form a cycle (a bone continues one of its descendants)")
    anc = np.zeros((ns, ns))
    up = seg_parent.copy()
    rows = np.arange(ns)
    while np.any(up >= 0):  # at most max depth steps
        live = up >= 0
        anc[rows[live], up[live]] = 1.0
        up[live] = seg_parent[up[live]]
    owner = np.where(seg_parent >= 0, seg_parent, ns)  # row of the kids table each segment sits in
    order = np.argsort(owner, kind="stable")
    cnt = np.bincount(owner, minlength=ns + 1)
    slot = np.arange(ns) - np.repeat(np.cumsum(cnt) - cnt, cnt)
    kids = np.full((ns + 1, max(1, int(cnt.max()))), -1, np.int64)
    kids[owner[order], slot] = order
    levels = tuple(np.nonzero(depth == d)[0] for d in range(int(depth.max()) + 1))
    return _SkeletonTree(length=seg_len, kids=kids, anc=anc, levels=levels, seg_bone=seg_bone,
                         own=np.arange(nb), trunk=trunk, offset=offset, bone_length=length)


def _tree_coords(tree: _SkeletonTree, bone: np.ndarray, t: np.ndarray) -> np.ndarray:
    """Tree coordinates z (N,S): z_s = how much of segment s the path from the root to a covers.

    Along a chain the sum of z is the arc length from the root, so averages of z are averages along the
    chain; on two branches z keeps them apart (their common part is the path to the branching).
    """
    n = bone.shape[0]
    rows = np.arange(n)
    arc = t * tree.bone_length[bone]
    own = tree.own[bone]
    z = tree.anc[own] * tree.length[None, :]
    tr = tree.trunk[bone]
    off = tree.offset[bone]
    has = tr >= 0
    z[rows[has], tr[has]] = np.minimum(arc[has], off[has])
    z[rows, own] = np.maximum(arc - off, 0.0)
    return z


def _pulls(tree: _SkeletonTree, z: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """pull (N,S): z_s plus the net advance past segment s's end; and the net advance past the root (N,).

    At a branching the net advance is pull(strongest child) - sum(pull(other children)): for weights on
    the branches' far ends this is where their mean along the tree lies (negative: before the branching).
    """
    pull = z.copy()

    def advance(rows: np.ndarray) -> np.ndarray:
        k = tree.kids[rows]  # (R, K)
        has = k >= 0
        pk = pull[:, np.maximum(k, 0)]  # (N, R, K)
        top = np.where(has[None], pk, -np.inf).max(axis=2)
        tot = np.where(has[None], pk, 0.0).sum(axis=2)
        return np.where(has.any(axis=1)[None, :], 2.0 * top - tot, 0.0)

    for lvl in reversed(tree.levels):
        pull[:, lvl] += advance(lvl)
    return pull, advance(np.array([tree.length.shape[0]]))[:, 0]


def _reproject(tree: _SkeletonTree, z: np.ndarray, prev: np.ndarray | None = None) -> tuple[np.ndarray, np.ndarray]:
    """(bone, t) of tree coordinates z (N,S): walk from the root along the strongest branch by the net
    advance. Exact inverse of `_tree_coords`; continuous in z up to the trunks' tolerance (the branch chosen
    at a joint only changes where the walk stops at or before that joint), and linear along chains."""
    n = z.shape[0]
    pull, budget = _pulls(tree, z)
    ns = tree.length.shape[0]
    seg = np.zeros(n, np.int64)
    node = np.full(n, ns, np.int64)
    act = np.arange(n)
    for _ in range(len(tree.levels) + 1):
        if act.size == 0:
            break
        k = tree.kids[node[act]]
        pk = np.where(k >= 0, pull[act[:, None], np.maximum(k, 0)], -np.inf)
        ch = k[np.arange(act.size), np.argmax(pk, axis=1)]
        ln = tree.length[ch]
        b = budget[act]
        stop = (b <= ln) | (tree.kids[ch, 0] < 0)
        seg[act[stop]] = ch[stop]
        budget[act[~stop]] -= ln[~stop]
        node[act[~stop]] = ch[~stop]
        act = act[~stop]
    b = np.clip(budget, 0.0, tree.length[seg])
    bone = tree.seg_bone[seg]
    in_trunk = bone < 0
    if in_trunk.any():  # a trunk stands for its members: take the strongest one
        k = tree.kids[seg[in_trunk]]
        pk = np.where(k >= 0, pull[np.nonzero(in_trunk)[0][:, None], np.maximum(k, 0)], -np.inf)
        pick = tree.seg_bone[k[np.arange(k.shape[0]), np.argmax(pk, axis=1)]]
        if prev is not None:  # a point already on one of the trunk's bones stays on it
            pb = prev[in_trunk]
            pick = np.where(tree.trunk[pb] == seg[in_trunk], pb, pick)
        bone[in_trunk] = pick
    arc = np.where(in_trunk, b, tree.offset[bone] + b)
    t = np.zeros(n)
    ln = tree.bone_length[bone]
    np.divide(arc, ln, out=t, where=ln > 0)
    return bone.astype(np.int32), np.clip(t, 0.0, 1.0).astype(np.float32)


def _dilate(topology: MeshTopology, radius: np.ndarray) -> np.ndarray:
    """(V,) bool: vertices within radius[i] rings of some vertex i (radius (V,) int, <= 0: not a seed)."""
    r = np.where(radius > 0, radius, -1).astype(np.int64)
    has = topology.adj_count > 0
    off = topology.adj_offset.astype(np.int64)[has]
    idx = topology.adj_index.astype(np.int64)
    for _ in range(int(r.max()) if r.size else 0):  # one ring per step, vectorised over vertices
        best = np.full(r.shape[0], np.iinfo(np.int64).min)
        best[has] = np.maximum.reduceat(r[idx], off)
        new = np.maximum(r, best - 1)
        if np.array_equal(new, r):
            break
        r = new
    return r >= 0


_ALLOWED_SAMPLES = 33
"""Positions per bone (t = 0, 1/32, ..., 1) searched for the nearest allowed attachment in tree coordinates."""


def _keep_allowed(tree: _SkeletonTree, z: np.ndarray, allow: np.ndarray, prev: np.ndarray, bone: np.ndarray,
                  t: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """(bone, t) with every point that smoothing reprojected onto a bone outside its `allow` row (other than its
    `prev` bone) put at the nearest allowed attachment to its smoothed tree coordinates z (L1, the metric of
    the smoothing; sampled along each allowed bone, the previous bone included)."""
    bad = ~allow[np.arange(bone.shape[0]), bone] & (bone != prev)
    if not bad.any():
        return bone, t
    rows = np.nonzero(bad)[0]
    ok = allow[rows].copy()
    ok[np.arange(rows.size), prev[rows]] = True
    zr = z[rows]
    best = np.full(rows.size, np.inf)
    nb, nt = bone[rows].copy(), t[rows].copy()
    grid = np.linspace(0.0, 1.0, _ALLOWED_SAMPLES)
    for b in np.nonzero(ok.any(axis=0))[0]:  # per candidate bone (a few dozen), vectorised over points
        m = np.nonzero(ok[:, b])[0]
        zg = _tree_coords(tree, np.full(grid.shape[0], b, np.int64), grid)  # (G,S)
        dist = np.abs(zr[m, None, :] - zg[None, :, :]).sum(axis=2)  # (M,G)
        g = np.argmin(dist, axis=1)
        d = dist[np.arange(m.size), g]
        better = d < best[m]
        best[m[better]] = d[better]
        nb[m[better]] = b
        nt[m[better]] = grid[g[better]]
    bone, t = bone.copy(), t.copy()
    bone[rows], t[rows] = nb, nt.astype(t.dtype)
    return bone, t


@quiet_underflow
def smooth_binding(
    binding: Binding,
    topology: MeshTopology,
    bind_joints: np.ndarray,
    *,
    passes: int = 6,
    strength: float = 1.0,
    parents: np.ndarray | None = None,
    gap_threshold: float = DEFAULT_GAP_THRESHOLD,
    allowed: np.ndarray | None = None,
) -> Binding:
    """Alternate Laplacian smoothing of the attachments with reprojection onto the skeleton until no gap
    is left (at most `passes` passes; the research keeps them below 10).

    One pass:
    1. gaps: edges whose attachments are more than gap_threshold x the edge length apart, measured in 3D
       (`binding_quality`) or along the skeleton tree (L1 distance of the tree coordinates below);
    2. region: the vertices within r rings of a gap, r = 2 (1 + pass) ratio / gap_threshold, enough rings
       to spread the jump below the threshold, growing on later passes;
    3. smoothing: in tree coordinates z (per segment of the skeleton tree, how much of it the path from the
       root to the attachment covers) a Laplacian solve over the region finds the smoothest correction d,
       zero outside, that cancels the jumps across the gap edges and keeps every other edge's difference:
       min sum_gaps w |d_i - d_j + z_i - z_j|^2 + sum_other w |d_i - d_j|^2, w = 1/|v_i - v_j|^2 (the
       gap measure is relative to the edge length), plus a 1e-3 pull to d = 0;
       z <- z + strength * d;
    4. reprojection onto the skeleton tree: walk from the root along the branch with the most weight by
       the net advance (where weights on several branches balance, the walk stops at their joint).
       Exact on attachments, continuous, and linear along chains of bones.

    So neighbours across a branching joint slide towards the shared joint instead of jumping between
    branches (a 3D average and nearest-bone projection would), and only the neighbourhoods of gaps move:
    elsewhere the binding stays as it was, which keeps smoothing from drawing attachments near leaf bones
    together (the research's reason to keep the passes few). Siblings (bones leaving one joint) move
    rigidly together; where they stay within gap_threshold x the median edge length of each other they
    share a trunk segment of the tree, so moving between them there is not a detour through their joint
    (chest -> neck and chest -> shoulder of the humanoid run 12 degrees apart).

    With the skin weights (allowed (V,B) bool, `weight_support`: the bones whose parent joint carries a
    meaningful share of each point's weight) smoothing respects them: (a) only gaps between neighbours that
    some bone may carry both are closed (where their weights share no carrying joint the jump is the weights'
    own, as in LBS); (b) points whose allowed bones all belong to one joint (LBS moves them rigidly with it)
    stay where they are (d = 0), so the region cannot spread over a whole coarse mesh and drag it along the
    tree; (c) a point reprojected onto a bone outside its row goes to the nearest allowed attachment to its
    smoothed z (L1, sampled along each allowed bone; its previous bone stays allowed); (d) the binding of
    the pass with the fewest gaps (then the smallest largest ratio) is returned, so it is never worse than
    the input.

    passes: integer in [0, 9]; strength in (0, 1]; parents (J,) joins bones at coincident joints (without
    it bones are joined by joint index only); gap_threshold > 0. quality is copied from `binding` and
    `smooth_passes_used` (passes that found gaps; with `allowed`, the passes behind the binding returned) is
    added.
    """
    if not (0 <= int(passes) <= MAX_SMOOTH_PASSES) or int(passes) != passes:
        raise ValueError(f"passes must be an integer in [0, {MAX_SMOOTH_PASSES}], got {passes!r}")
    if not (0.0 < float(strength) <= 1.0):
        raise ValueError(f"strength must be in (0, 1], got {strength!r}")
    if not gap_threshold > 0:
        raise ValueError(f"gap_threshold must be > 0, got {gap_threshold!r}")
    v = topology.n_control
    if binding.bone.shape[0] != v:
        raise ValueError(f"binding has {binding.bone.shape[0]} points, topology has {v} control points")
    bj = np.asarray(bind_joints, np.float64)
    par = None
    if parents is not None:
        bj, par = _check_skeleton(bj, parents)
    positions = topology.positions
    allow = _check_allowed(allowed, v, binding.bones.count)
    p, c = bone_endpoints(binding.bones, bj.astype(np.float32))
    bone, t = binding.bone.astype(np.int32).copy(), binding.t.astype(np.float32).copy()
    e = topology.edges.astype(np.int64)
    le = _edge_lengths(positions, e)
    ok = le > 0
    used = 0
    if passes and ok.any():
        med = float(np.median(le[ok]))
        w = 1.0 / np.maximum(le, 0.1 * med) ** 2  # floored: near-degenerate edges must not dominate
        lap = sp.coo_matrix((np.r_[w, w], (np.r_[e[:, 0], e[:, 1]], np.r_[e[:, 1], e[:, 0]])), shape=(v, v)).tocsr()
        deg = np.asarray(lap.sum(axis=1)).ravel()
        tree = _skeleton_tree(binding.bones, bj, par, 1e-6 * _scale_of(bj, positions), gap_threshold * med)
        if allow is not None:  # points one joint carries alone: LBS moves them rigidly with it, smoothing leaves them
            pjb = binding.bones.parent_joint.astype(np.int64)
            carriers = (allow.astype(np.int64) @ (pjb[:, None] == np.arange(int(pjb.max()) + 1)[None, :])) > 0
            decisive = carriers.sum(axis=1) == 1
        kept = (bone.copy(), t.copy(), 0)
        score = None
        for k in range(int(passes) + 1):
            ratio = _edge_ratio(_attach(p, c, bone, t), e, le)
            gaps = int(np.sum(ratio > gap_threshold))
            if allow is not None:  # restricted passes can fail to close a gap: keep the best binding seen
                now = (gaps, float(ratio.max()))
                if score is None or now < score:
                    score, kept = now, (bone.copy(), t.copy(), k)
            if not gaps or k == int(passes):
                break
            used += 1
            z = _tree_coords(tree, bone, t.astype(np.float64))
            along = np.zeros_like(le)
            np.divide(np.abs(z[e[:, 0]] - z[e[:, 1]]).sum(axis=1), le, out=along, where=ok)
            ratio = np.maximum(ratio, along)
            gap = ok & (ratio > gap_threshold)
            if allow is not None:
                # only gaps smoothing may close: neighbours that some bone may carry both (where their
                # weights share no joint the jump is the weights' own, as LBS's)
                gap &= (allow[e[:, 0]] & allow[e[:, 1]]).any(axis=1)
                if not gap.any():
                    break
            need = np.ceil(_REGION_RINGS * (1.0 + k) * ratio[gap] / gap_threshold).astype(np.int64)
            seed = np.zeros(v, np.int64)
            np.maximum.at(seed, e[gap, 0], need)
            np.maximum.at(seed, e[gap, 1], need)
            region = _dilate(topology, seed)
            if allow is not None:  # and points one joint carries alone stay where they are (d = 0)
                region &= ~decisive
            fi = np.nonzero(region)[0]
            if fi.size == 0:
                break
            ge = e[gap]
            jump = w[gap, None] * (z[ge[:, 0]] - z[ge[:, 1]])
            div = np.zeros_like(z)
            np.add.at(div, ge[:, 0], -jump)
            np.add.at(div, ge[:, 1], jump)
            mat = (sp.diags(deg[fi] * (1.0 + _SCREEN)) - lap[fi][:, fi]).tocsc()
            zf = z[fi] + strength * spla.splu(mat).solve(div[fi])
            nb_, nt_ = _reproject(tree, zf, bone[fi])
            if allow is not None:  # never onto a bone the point's weights do not move it with
                nb_, nt_ = _keep_allowed(tree, zf, allow[fi], bone[fi], nb_, nt_)
            bone[fi], t[fi] = nb_, nt_
        if allow is not None:
            bone, t, used = kept
    out = make_binding(positions, binding.bones, bone, t, bind_joints)
    out.quality = dict(binding.quality)
    out.quality["smooth_passes_used"] = used
    return out
