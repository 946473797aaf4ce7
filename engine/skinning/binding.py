"""Attachment binding (research ch. 3): attach every control point to one point on one bone.

A control point v is bound to bone b = (p, c) at a = p + t (c - p), t in [0, 1], with scale vector s = v - a.
Methods:

- `bind_project` (direct binding, eq. 12): project onto every bone segment, keep the closest. Simple, but
  leaves gaps between the attachments of neighbouring points on the inner side of bends and at joints with
  several children.
- `bind_planar` (planar binding, eq. 13): divider planes at every joint partition the points between the
  bones meeting there; t = d_p / (d_p + d_c) from the distances to the bone's divider planes at its two ends,
  so t runs 0..1 across each region and neighbours on both sides of a divider attach near the joint.
  Dividers are initialised automatically as bisector planes of each pair of bones meeting at a joint
  (normal u1 - u2 for the unit directions u1, u2 from the joint along the two bones: the plane then
  contains their half-vector and their cross product, as the research describes), including between
  siblings at joints with several children (pelvis, chest). `plane_normals` overrides the divider(s)
  between a joint's incoming bone and its outgoing bones.
- `bind_from_weights`: seeded by skin weights: project onto the bones touching the joint of largest weight.
- `smooth_binding`: alternating Laplacian smoothing of the attachment points and reprojection onto the
  nearest bone, a few passes (< 10), closes the remaining gaps.

Bones (`make_bones`): one bone per parent->child joint pair (zero-length pairs are skipped), plus one tip
bone per leaf joint, pointing along the offset from the nearest ancestor at a different position (or the
joint's local +Y when there is none), as long as the mesh extends beyond the joint along that direction
(measured over the control points whose nearest joint is the leaf), else as long as that offset.

Points far from every bone are still bound, to the nearest bone. Joints at the same position (a zero-length
link) are treated as one location for the divider planes.
"""
from __future__ import annotations

from engine.numerics import quiet_underflow

import numpy as np

from engine.skinning.meshprep import bbox_diagonal
from engine.skinning.types import Binding, Bones, MeshTopology, bone_endpoints

__all__ = [
    "make_bones",
    "nearest_bone",
    "segment_projection",
    "bind_project",
    "bind_planar",
    "bind_from_weights",
    "make_binding",
    "smooth_binding",
    "binding_quality",
    "bind",
    "per_control",
    "joint_location_groups",
    "MAX_SMOOTH_PASSES",
]

MAX_SMOOTH_PASSES = 9
"""The research keeps smoothing below 10 passes: more drags attachments near leaf bones together."""
DEFAULT_GAP_THRESHOLD = 3.0
"""A gap: |a_i - a_j| larger than this many times the edge length |v_i - v_j|."""
_CHUNK_ELEMENTS = 1 << 21
"""Rows x bones (or planes) processed per chunk, to bound temporary memory."""





# ----------------------------------------------------------------------------------------------------------
# skeleton -> bones


def _check_skeleton(bind_joints: np.ndarray, parents: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    bj = np.asarray(bind_joints, np.float64)
    par = np.asarray(parents).astype(np.int64).reshape(-1)
    if bj.ndim != 3 or bj.shape[1:] != (4, 4):
        raise ValueError(f"bind_joints must have shape (J,4,4), got {bj.shape}")
    if par.shape[0] != bj.shape[0]:
        raise ValueError(f"parents must have shape ({bj.shape[0]},), got {np.asarray(parents).shape}")
    j = par.shape[0]
    bad = (par < -1) | (par >= j) | (par == np.arange(j))
    if np.any(bad):
        k = int(np.nonzero(bad)[0][0])
        raise ValueError(f"parents[{k}] = {par[k]} is invalid: must be -1 or in [0, {j - 1}] and not itself")
    anc = par.copy()
    for _ in range(j):  # every chain of parents must reach a root within J steps (vectorised over joints)
        live = anc >= 0
        if not live.any():
            break
        anc[live] = par[anc[live]]
    if np.any(anc >= 0):
        k = int(np.nonzero(anc >= 0)[0][0])
        raise ValueError(f"parents contain a cycle (joint {k} never reaches a root)")
    return bj, par


def joint_location_groups(bind_joints: np.ndarray, parents: np.ndarray, eps: float) -> np.ndarray:
    """(J,) for every joint the topmost ancestor reached through links shorter than eps (itself if none)."""
    bj, par = _check_skeleton(bind_joints, parents)
    pos = bj[:, :3, 3]
    j = par.shape[0]
    link = np.zeros(j, bool)
    has_p = par >= 0
    link[has_p] = np.linalg.norm(pos[has_p] - pos[par[has_p]], axis=1) <= eps
    top = np.arange(j)
    for _ in range(j):  # bounded by the depth of coincident chains (vectorised over joints)
        m = link[top]
        if not m.any():
            break
        top = np.where(m, par[top], top)
    return top


def _scale_of(bj: np.ndarray, positions: np.ndarray) -> float:
    pts = np.concatenate([bj[:, :3, 3], np.asarray(positions, np.float64).reshape(-1, 3)])
    return max(bbox_diagonal(pts), 1e-9)


@quiet_underflow
def make_bones(
    bind_joints: np.ndarray, parents: np.ndarray, positions: np.ndarray, *, min_length: float | None = None
) -> Bones:
    """Bones for the skeleton (J,4,4 bind joint world matrices, parents (J,)) and mesh points (V,3).

    min_length: bones shorter than this are skipped (default 1e-6 of the skeleton+mesh bbox diagonal).
    """
    bj, par = _check_skeleton(bind_joints, parents)
    pts = np.asarray(positions, np.float64).reshape(-1, 3)
    scale = _scale_of(bj, pts)
    eps = 1e-6 * scale if min_length is None else float(min_length)
    if not eps >= 0.0:
        raise ValueError(f"min_length must be >= 0, got {min_length!r}")
    pos = bj[:, :3, 3]
    j = par.shape[0]
    has_p = np.nonzero(par >= 0)[0]
    length = np.linalg.norm(pos[has_p] - pos[par[has_p]], axis=1)
    inner = has_p[length > eps]
    parent_joint = [par[inner]]
    child_joint = [inner]

    is_leaf = np.ones(j, bool)
    is_leaf[par[has_p]] = False
    leaves = np.nonzero(is_leaf)[0]
    # nearest joint location of every mesh point, to measure how far the mesh extends beyond each leaf
    # (coincident joints count as one location)
    top = joint_location_groups(bj, par, eps)
    nearest = np.full(pts.shape[0], -1, np.int64)
    if pts.shape[0] and leaves.size:
        step = max(1, _CHUNK_ELEMENTS // max(j, 1))
        for s in range(0, pts.shape[0], step):
            d2 = ((pts[s : s + step, None, :] - pos[None, :, :]) ** 2).sum(-1)
            nearest[s : s + step] = top[np.argmin(d2, axis=1)]
    tip_p, tip_local = [], []
    for leaf in leaves:  # set-up time only, once per skeleton
        a = par[leaf]
        offset = None
        while a >= 0:
            off = pos[leaf] - pos[a]
            if np.linalg.norm(off) > eps:
                offset = off
                break
            a = par[a]
        if offset is not None:
            d = offset / np.linalg.norm(offset)
            fallback = float(np.linalg.norm(offset))
        else:
            y = bj[leaf, :3, 1]
            d = y / np.linalg.norm(y) if np.linalg.norm(y) > 0 else np.array([0.0, 1.0, 0.0])
            fallback = 0.25 * scale
        mine = pts[nearest == top[leaf]]
        ext = float(((mine - pos[leaf]) @ d).max()) if mine.shape[0] else 0.0
        length_tip = ext if ext > max(eps, 1e-3 * fallback) else fallback
        if length_tip <= eps:
            continue
        tip_world = d * length_tip
        m = bj[leaf, :3, :3]
        try:
            local = np.linalg.solve(m, tip_world)
        except np.linalg.LinAlgError:
            raise ValueError(f"bind matrix of joint {leaf} is singular; cannot place its tip bone") from None
        tip_p.append(leaf)
        tip_local.append(local)
    parent_joint.append(np.asarray(tip_p, np.int64))
    child_joint.append(np.full(len(tip_p), -1, np.int64))
    tl = np.zeros((inner.shape[0] + len(tip_p), 3), np.float32)
    if tip_p:
        tl[inner.shape[0] :] = np.asarray(tip_local, np.float32)
    bones = Bones(
        parent_joint=np.concatenate(parent_joint).astype(np.int32),
        child_joint=np.concatenate(child_joint).astype(np.int32),
        tip_local=tl,
    )
    if bones.count == 0:
        raise ValueError("the skeleton yields no bone (all joints coincide and the mesh is empty)")
    return bones


# ----------------------------------------------------------------------------------------------------------
# projection onto bone segments


@quiet_underflow
def segment_projection(points: np.ndarray, p: np.ndarray, c: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Eq. 12 for every point and segment: t (N,B) = clamp((v-p).(c-p)/|c-p|^2, 0, 1), squared distance (N,B)."""
    v = np.asarray(points, np.float32)
    p = np.asarray(p, np.float32)
    d = np.asarray(c, np.float32) - p
    dd = (d * d).sum(1)
    inv = np.zeros_like(dd)
    np.divide(1.0, dd, out=inv, where=dd > 0)
    rel = v[:, None, :] - p[None, :, :]
    t = np.clip(np.einsum("nbk,bk->nb", rel, d) * inv[None, :], 0.0, 1.0)
    diff = rel - t[:, :, None] * d[None, :, :]
    return t, (diff * diff).sum(-1)


@quiet_underflow
def nearest_bone(
    points: np.ndarray, p: np.ndarray, c: np.ndarray, allowed: np.ndarray | None = None
) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Closest segment (P[b], C[b]) to every point: (bone (N,) int32, t (N,) float32, distance (N,) float32).

    allowed: optional (N,B) bool; a point whose row allows no bone falls back to all bones.
    The bone is chosen from squared distances expanded into matrix products (fast; coordinates centred on
    the skeleton to limit cancellation); t and the distance are then recomputed directly for that bone.
    """
    pts = np.asarray(points, np.float32).reshape(-1, 3)
    p = np.asarray(p, np.float32)
    c = np.asarray(c, np.float32)
    n, b = pts.shape[0], p.shape[0]
    centre = 0.5 * (p.min(axis=0) + p.max(axis=0)) if b else np.zeros(3, np.float32)
    pc = p - centre
    d = c - p
    dd = (d * d).sum(1)
    inv = np.zeros_like(dd)
    np.divide(1.0, dd, out=inv, where=dd > 0)
    pd = (pc * d).sum(1)
    pp2 = (pc * pc).sum(1)
    bone = np.zeros(n, np.int32)
    step = max(1, _CHUNK_ELEMENTS // max(b, 1))
    for s in range(0, n, step):
        vc = pts[s : s + step] - centre
        vd = vc @ d.T - pd[None, :]  # (v - p).d
        t = np.clip(vd * inv[None, :], 0.0, 1.0)
        d2 = ((vc * vc).sum(1)[:, None] - 2.0 * (vc @ pc.T) + pp2[None, :]) - t * (2.0 * vd - t * dd[None, :])
        if allowed is not None:
            a = allowed[s : s + step]
            none = ~a.any(axis=1)
            d2 = np.where(a | none[:, None], d2, np.inf)
        bone[s : s + step] = np.argmin(d2, axis=1)
    # exact t and distance on the chosen bone
    pk = np.take(p, bone, axis=0)
    dk = np.take(d, bone, axis=0)
    rel = pts - pk
    t = np.clip((rel * dk).sum(1) * inv[bone], 0.0, 1.0).astype(np.float32)
    diff = rel - t[:, None] * dk
    return bone, t, np.sqrt((diff * diff).sum(1)).astype(np.float32)


def _check_points(positions: np.ndarray) -> np.ndarray:
    pts = np.asarray(positions, np.float32)
    if pts.ndim != 2 or pts.shape[1] != 3:
        raise ValueError(f"positions must have shape (V,3), got {pts.shape}")
    return pts


@quiet_underflow
def bind_project(positions: np.ndarray, bones: Bones, bind_joints: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Direct binding (eq. 12): (bone (V,), t (V,)) of the closest projection onto any bone."""
    pts = _check_points(positions)
    p, c = bone_endpoints(bones, np.asarray(bind_joints, np.float32))
    bone, t, _ = nearest_bone(pts, p, c)
    return bone, t


@quiet_underflow
def bind_from_weights(
    positions: np.ndarray, joints: np.ndarray, weights: np.ndarray, bones: Bones, bind_joints: np.ndarray
) -> tuple[np.ndarray, np.ndarray]:
    """Binding seeded by skin weights (V,4): project onto the bones touching the largest-weight joint.

    A point whose largest-weight joint touches no bone (e.g. all its bones were zero-length) is projected
    onto every bone.
    """
    pts = _check_points(positions)
    jn = np.asarray(joints).astype(np.int64)
    w = np.asarray(weights, np.float32)
    if jn.shape != (pts.shape[0], 4) or w.shape != (pts.shape[0], 4):
        raise ValueError(f"joints and weights must have shape ({pts.shape[0]}, 4), got {jn.shape} and {w.shape}")
    top = jn[np.arange(pts.shape[0]), np.argmax(w, axis=1)]
    p, c = bone_endpoints(bones, np.asarray(bind_joints, np.float32))
    allowed = (top[:, None] == bones.parent_joint[None, :]) | (top[:, None] == bones.child_joint[None, :])
    bone, t, _ = nearest_bone(pts, p, c, allowed)
    return bone, t


def _divider_planes(
    bones: Bones,
    bind_joints: np.ndarray,
    parents: np.ndarray,
    eps: float,
    plane_normals: np.ndarray | dict | None,
) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
    """Divider planes of every bone end, sorted by key = 2*bone + end (0: parent end, 1: child end).

    Returns (key (P,), point (P,3), unit normal (P,3) pointing into the bone's side, member (P,) bool).
    Every key 0..2B-1 has at least one plane; planes with member=False (a bone end alone at its location:
    a tip, or a root with one bone) only bound t, not membership.
    """
    bj = np.asarray(bind_joints, np.float64)
    p, c = bone_endpoints(bones, bj)
    p, c = p.astype(np.float64), c.astype(np.float64)
    nb = bones.count
    j = bj.shape[0]
    top = joint_location_groups(bj, parents, eps)
    d = c - p
    u = d / np.maximum(np.linalg.norm(d, axis=1, keepdims=True), 1e-30)
    # one incidence per bone end: location group, point, direction away from the joint along the bone
    inc_bone = np.concatenate([np.arange(nb), np.arange(nb)])
    inc_end = np.concatenate([np.zeros(nb, np.int64), np.ones(nb, np.int64)])
    child = bones.child_joint.astype(np.int64)
    inc_group = np.concatenate([top[bones.parent_joint], np.where(child >= 0, top[np.maximum(child, 0)], j + np.arange(nb))])
    inc_point = np.concatenate([p, c])
    inc_dir = np.concatenate([u, -u])
    inc_joint = np.concatenate([bones.parent_joint, child])  # joint at the location (-1 for tips)

    override = np.full((j, 3), np.nan)
    if plane_normals is not None:
        if isinstance(plane_normals, dict):
            for k, n in plane_normals.items():
                if not (0 <= int(k) < j):
                    raise ValueError(f"plane_normals key {k} is not a joint index in [0, {j - 1}]")
                override[int(k)] = np.asarray(n, np.float64).reshape(3)
        else:
            ov = np.asarray(plane_normals, np.float64)
            if ov.shape != (j, 3):
                raise ValueError(f"plane_normals must be a dict or have shape ({j}, 3) (NaN rows = automatic), got {ov.shape}")
            override[:] = ov
        given = ~np.isnan(override).any(axis=1)
        nrm = np.linalg.norm(override[given], axis=1)
        if np.any(nrm <= 0):
            raise ValueError("plane_normals override vectors must be non-zero")
        override[given] /= nrm[:, None]

    # all ordered pairs of incidences at the same location (few per joint; set-up cost only)
    order = np.argsort(inc_group, kind="stable")
    g_sorted = inc_group[order]
    starts = np.nonzero(np.r_[True, g_sorted[1:] != g_sorted[:-1]])[0]
    sizes = np.diff(np.r_[starts, g_sorted.shape[0]])
    ii, kk = [], []
    for s, n in zip(starts, sizes):
        if n > 1:
            idx = order[s : s + n]
            a, b = np.meshgrid(idx, idx, indexing="ij")
            m = a != b
            ii.append(a[m])
            kk.append(b[m])
    ii = np.concatenate(ii) if ii else np.zeros(0, np.int64)
    kk = np.concatenate(kk) if kk else np.zeros(0, np.int64)
    normal = inc_dir[ii] - inc_dir[kk]
    # user override between an incoming (child end) and an outgoing (parent end) bone at that joint
    loc_joint = np.where(inc_end[ii] == 0, inc_joint[ii], inc_joint[kk])
    mixed = inc_end[ii] != inc_end[kk]
    ov = override[np.maximum(loc_joint, 0)]
    use_ov = mixed & (loc_joint >= 0) & ~np.isnan(ov).any(axis=1)
    sign = np.sign(np.einsum("ij,ij->i", ov, normal))
    sign[sign == 0] = 1.0
    normal = np.where(use_ov[:, None], np.nan_to_num(ov) * sign[:, None], normal)
    nn = np.linalg.norm(normal, axis=1)
    ok = nn > 1e-6
    ii, normal = ii[ok], normal[ok] / nn[ok, None]

    has_plane = np.zeros(2 * nb, bool)
    has_plane[ii] = True
    alone = np.nonzero(~has_plane)[0]
    key = np.concatenate([2 * inc_bone[ii] + inc_end[ii], 2 * inc_bone[alone] + inc_end[alone]])
    point = np.concatenate([inc_point[ii], inc_point[alone]])
    nrm = np.concatenate([normal, inc_dir[alone]])
    member = np.concatenate([np.ones(ii.shape[0], bool), np.zeros(alone.shape[0], bool)])
    srt = np.argsort(key, kind="stable")
    return key[srt], point[srt].astype(np.float32), nrm[srt].astype(np.float32), member[srt]


@quiet_underflow
def bind_planar(
    positions: np.ndarray,
    bones: Bones,
    bind_joints: np.ndarray,
    parents: np.ndarray,
    *,
    plane_normals: np.ndarray | dict | None = None,
) -> tuple[np.ndarray, np.ndarray]:
    """Planar binding with joint dividers (eq. 13): (bone (V,), t (V,)).

    A point belongs to a bone when it lies on the bone's side of every divider plane at both ends; among the
    bones it belongs to, the closest is taken; a point belonging to none binds to the closest bone by
    projection. t = d_p / (d_p + d_c) with d_p, d_c the (clamped) distances to the bone's divider planes at
    its parent and child ends (the nearest one where an end has several).

    plane_normals: per-joint override of the divider between the joint's incoming and outgoing bones, as a
    dict {joint: normal} or a (J,3) array with NaN rows for "automatic"; the orientation does not matter.
    """
    pts = _check_points(positions)
    bj, par = _check_skeleton(bind_joints, parents)
    eps = 1e-6 * _scale_of(bj, pts)
    key, point, normal, member = _divider_planes(bones, bj, par, eps, plane_normals)
    nb = bones.count
    starts = np.nonzero(np.r_[True, key[1:] != key[:-1]])[0]
    pf, cf = bone_endpoints(bones, bj.astype(np.float32))
    offset = np.einsum("pk,pk->p", point, normal)
    n = pts.shape[0]
    bone = np.zeros(n, np.int32)
    t = np.zeros(n, np.float32)
    tol = np.float32(1e-6 * _scale_of(bj, pts))
    step = max(1, _CHUNK_ELEMENTS // max(key.shape[0] + nb, 1))
    for s in range(0, n, step):
        e = min(n, s + step)
        sd = pts[s:e] @ normal.T - offset[None, :]  # signed distance, positive on the bone's side
        sdt = np.minimum.reduceat(sd, starts, axis=1)  # (n, 2B) distance to the end's nearest divider
        sdm = np.minimum.reduceat(np.where(member[None, :], sd, np.inf), starts, axis=1)
        inside = (sdm[:, 0::2] >= -tol) & (sdm[:, 1::2] >= -tol)
        tp, d2 = segment_projection(pts[s:e], pf, cf)
        k = np.argmin(np.where(inside, d2, np.inf), axis=1)
        none = ~inside.any(axis=1)
        k[none] = np.argmin(d2[none], axis=1)
        rows = np.arange(e - s)
        dp = np.maximum(sdt[rows, 2 * k], 0.0)
        dc = np.maximum(sdt[rows, 2 * k + 1], 0.0)
        tot = dp + dc
        tt = np.zeros_like(tot)
        np.divide(dp, tot, out=tt, where=tot > 0)
        use_proj = none | (tot <= 0)
        tt = np.where(use_proj, tp[rows, k], tt)
        bone[s:e] = k
        t[s:e] = np.clip(tt, 0.0, 1.0)
    return bone, t


# ----------------------------------------------------------------------------------------------------------
# binding object, smoothing, quality


@quiet_underflow
def make_binding(
    positions: np.ndarray, bones: Bones, bone: np.ndarray, t: np.ndarray, bind_joints: np.ndarray
) -> Binding:
    """Binding from (bone, t) per point: a = p + t (c - p), s = v - a (float32)."""
    pts = _check_points(positions)
    p, c = bone_endpoints(bones, np.asarray(bind_joints, np.float32))
    bone = np.asarray(bone).astype(np.int32)
    t = np.asarray(t, np.float32)
    pb = np.take(p, bone, axis=0)
    attach = pb + t[:, None] * (np.take(c, bone, axis=0) - pb)
    return Binding(bones=bones, bone=bone, t=t, attach=attach.astype(np.float32), scale=(pts - attach).astype(np.float32))


@quiet_underflow
def smooth_binding(
    binding: Binding,
    topology: MeshTopology,
    bind_joints: np.ndarray,
    *,
    passes: int = 6,
    strength: float = 1.0,
) -> Binding:
    """Alternate Laplacian smoothing of the attachment points with reprojection onto the nearest bone.

    passes in [0, 9] (the research keeps it below 10); strength in (0, 1]: a <- (1-strength) a +
    strength * mean(neighbour a) before each reprojection. Points without neighbours keep their attachment.
    """
    if not (0 <= int(passes) <= MAX_SMOOTH_PASSES) or int(passes) != passes:
        raise ValueError(f"passes must be an integer in [0, {MAX_SMOOTH_PASSES}], got {passes!r}")
    if not (0.0 < float(strength) <= 1.0):
        raise ValueError(f"strength must be in (0, 1], got {strength!r}")
    v = topology.n_control
    if binding.bone.shape[0] != v:
        raise ValueError(f"binding has {binding.bone.shape[0]} points, topology has {v} control points")
    p, c = bone_endpoints(binding.bones, np.asarray(bind_joints, np.float32))
    positions = topology.positions
    bone, t = binding.bone.copy(), binding.t.copy()
    a = binding.attach.astype(np.float32).copy()
    src = np.repeat(np.arange(v), topology.adj_count)
    cnt = topology.adj_count.astype(np.float32)
    has_n = cnt > 0
    for _ in range(int(passes)):
        acc = np.zeros((v, 3), np.float32)
        np.add.at(acc, src, a[topology.adj_index])
        mean = np.where(has_n[:, None], acc / np.maximum(cnt, 1.0)[:, None], a)
        smoothed = (1.0 - strength) * a + strength * mean
        nb, nt, _ = nearest_bone(smoothed[has_n], p, c)
        bone[has_n], t[has_n] = nb, nt
        pb = np.take(p, bone, axis=0)
        a = pb + t[:, None] * (np.take(c, bone, axis=0) - pb)
    out = make_binding(positions, binding.bones, bone, t, bind_joints)
    out.quality = dict(binding.quality)
    return out


@quiet_underflow
def binding_quality(
    binding: Binding, topology: MeshTopology, *, gap_threshold: float = DEFAULT_GAP_THRESHOLD
) -> dict:
    """Gap statistics between attachments of adjacent control points, relative to their edge length.

    gap_mean / gap_max: mean / max of |a_i - a_j| / |v_i - v_j| over edges of non-zero length;
    gaps: edges whose ratio exceeds gap_threshold; plus scale-vector length stats and t clamping counts.
    """
    if not gap_threshold > 0:
        raise ValueError(f"gap_threshold must be > 0, got {gap_threshold!r}")
    e = topology.edges.astype(np.int64)
    pos = topology.positions.astype(np.float64)
    a = binding.attach.astype(np.float64)
    le = np.linalg.norm(pos[e[:, 0]] - pos[e[:, 1]], axis=1)
    la = np.linalg.norm(a[e[:, 0]] - a[e[:, 1]], axis=1)
    ok = le > 0
    ratio = la[ok] / le[ok]
    slen = np.linalg.norm(binding.scale.astype(np.float64), axis=1)
    per_bone = np.bincount(binding.bone, minlength=binding.bones.count)
    return {
        "gap_mean": float(ratio.mean()) if ratio.size else 0.0,
        "gap_max": float(ratio.max()) if ratio.size else 0.0,
        "gaps": int((ratio > gap_threshold).sum()),
        "gap_threshold": float(gap_threshold),
        "scale_mean": float(slen.mean()) if slen.size else 0.0,
        "scale_max": float(slen.max()) if slen.size else 0.0,
        "t_at_0": int((binding.t <= 0).sum()),
        "t_at_1": int((binding.t >= 1).sum()),
        "unused_bones": int((per_bone == 0).sum()),
    }


def per_control(topology: MeshTopology, values: np.ndarray) -> np.ndarray:
    """Per-control-point rows of `values`: (D,...) per display vertex -> the representative's row;
    (V,...) is returned as is (when D == V nothing was welded and both orders agree)."""
    vals = np.asarray(values)
    if vals.shape[0] == topology.n_display:
        return vals[topology.display_of_control]
    if vals.shape[0] == topology.n_control:
        return vals
    raise ValueError(
        f"expected {topology.n_display} rows (display vertices) or {topology.n_control} (control points), "
        f"got {vals.shape[0]}"
    )


@quiet_underflow
def bind(
    topology: MeshTopology,
    bind_joints: np.ndarray,
    parents: np.ndarray,
    *,
    method: str = "planar",
    joints: np.ndarray | None = None,
    weights: np.ndarray | None = None,
    smooth_passes: int = 6,
    plane_normals: np.ndarray | dict | None = None,
    bones: Bones | None = None,
    gap_threshold: float = DEFAULT_GAP_THRESHOLD,
) -> Binding:
    """Bind the control points of `topology` to the skeleton.

    method: "planar" (joint dividers), "project" (direct projection) or "weights" (needs joints and weights,
    (D,4) per display vertex or (V,4) per control point; the representative display vertex is used).
    Then `smooth_passes` passes of smoothing and reprojection. quality holds `binding_quality` of the final
    binding, the method, and the gaps before smoothing.
    """
    methods = ("planar", "project", "weights")
    if method not in methods:
        raise ValueError(f"method must be one of {methods}, got {method!r}")
    bj, par = _check_skeleton(bind_joints, parents)
    pts = topology.positions
    if bones is None:
        bones = make_bones(bj, par, pts)
    if method == "planar":
        bone, t = bind_planar(pts, bones, bj, par, plane_normals=plane_normals)
    elif method == "project":
        bone, t = bind_project(pts, bones, bj)
    else:
        if joints is None or weights is None:
            raise ValueError("method='weights' needs joints and weights")
        jn, w = np.asarray(joints), np.asarray(weights)
        jn, w = per_control(topology, jn), per_control(topology, w)
        bone, t = bind_from_weights(pts, jn, w, bones, bj)
    binding = make_binding(pts, bones, bone, t, bj)
    before = binding_quality(binding, topology, gap_threshold=gap_threshold)
    if smooth_passes:
        binding = smooth_binding(binding, topology, bj, passes=smooth_passes)
    binding.quality = binding_quality(binding, topology, gap_threshold=gap_threshold)
    binding.quality.update(
        method=method,
        smooth_passes=int(smooth_passes),
        gaps_before_smoothing=before["gaps"],
        gap_max_before_smoothing=before["gap_max"],
    )
    return binding
