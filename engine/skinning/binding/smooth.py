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
  skeleton, a few passes (< 10), closes the remaining gaps. Smoothing works in tree coordinates of the
  skeleton (how much of each bone the path from the root covers) and reprojection walks the bone tree, so
  neighbours across a branching joint (crotch, armpits, the plus's hub) slide towards the shared joint
  instead of jumping between branches; only the neighbourhoods of gaps move. See its docstring.
- `binding_quality`: gap statistics (a gap: neighbours whose attachments lie more than 3x their edge
  length apart). Default `bind` on the generated characters (before -> after smoothing, gaps / gap_max):
  cylinder 0 / 1.0 -> 0; box 0 / 1.0 -> 0; plus 204 / 12.0 -> 0 / 2.3 (1 pass); humanoid 625 / 36.1 ->
  0 / 2.99 (3 passes; ~0.2 s). The dense humanoid (90k points) keeps a few dozen after 6 passes.

Bones (`make_bones`): one bone per parent->child joint pair (zero-length pairs are skipped), plus one tip
bone per leaf joint, pointing along the offset from the nearest ancestor at a different position (or the
joint's local +Y when there is none), as long as the mesh extends beyond the joint along that direction
(measured over the control points whose nearest joint is the leaf), else as long as that offset.

Points far from every bone are still bound, to the nearest bone. Joints at the same position (a zero-length
link) are treated as one location for the divider planes.
"""
from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import scipy.sparse as sp
import scipy.sparse.linalg as spla

from engine.math.mesh import bbox_diagonal
from engine.math.numerics import quiet_underflow
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
_REGION_RINGS = 2.0
"""Rings smoothed around a gap per unit of (ratio / threshold) on the first pass (x (1 + pass) later)."""
_SCREEN = 1e-3
"""Weak pull of the smoothed tree coordinates towards their previous values (relative to the Laplacian
diagonal): keeps the smoothing solve well posed where a whole mesh component lies in the smoothed region."""
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
            none = ~a.any(axis=1, keepdims=True)
            d2 = np.where(a | none, d2, np.inf)
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
    inc_group = np.concatenate([top[bones.parent_joint],
                                np.where(child >= 0, top[np.maximum(child, 0)], j + np.arange(nb))])
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
                raise ValueError(f"plane_normals must be a dict or have shape ({j}, 3) (NaN rows = automatic), "
                                 f"got {ov.shape}")
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
    ii_parts, kk_parts = [], []
    for s, n in zip(starts, sizes):
        if n > 1:
            idx = order[s : s + n]
            a, b = np.meshgrid(idx, idx, indexing="ij")
            m = a != b
            ii_parts.append(a[m])
            kk_parts.append(b[m])
    ii = np.concatenate(ii_parts) if ii_parts else np.zeros(0, np.int64)
    kk = np.concatenate(kk_parts) if kk_parts else np.zeros(0, np.int64)
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
    attach = _attach(p, c, bone, t)
    return Binding(bones=bones, bone=bone, t=t, attach=attach, scale=(pts - attach).astype(np.float32))


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


def _attach(p: np.ndarray, c: np.ndarray, bone: np.ndarray, t: np.ndarray) -> np.ndarray:
    """a = p + t (c - p) on every point's bone, float32 (the one formula `make_binding` stores)."""
    p = np.asarray(p, np.float32)
    pb = np.take(p, bone, axis=0)
    return pb + np.asarray(t, np.float32)[:, None] * (np.take(np.asarray(c, np.float32), bone, axis=0) - pb)


def _edge_lengths(positions: np.ndarray, edges: np.ndarray) -> np.ndarray:
    e = edges.astype(np.int64)
    pos = positions.astype(np.float64)
    return np.linalg.norm(pos[e[:, 0]] - pos[e[:, 1]], axis=1)


def _edge_ratio(attach: np.ndarray, edges: np.ndarray, le: np.ndarray) -> np.ndarray:
    """|a_i - a_j| / |v_i - v_j| per edge (E,), 0 on edges of zero length."""
    e = edges.astype(np.int64)
    a = attach.astype(np.float64)
    ratio = np.zeros_like(le)
    np.divide(np.linalg.norm(a[e[:, 0]] - a[e[:, 1]], axis=1), le, out=ratio, where=le > 0)
    return ratio


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

    passes: integer in [0, 9]; strength in (0, 1]; parents (J,) joins bones at coincident joints (without
    it bones are joined by joint index only); gap_threshold > 0. quality is copied from `binding` and
    `smooth_passes_used` (passes that found gaps) is added.
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
        for k in range(int(passes)):
            ratio = _edge_ratio(_attach(p, c, bone, t), e, le)
            if not np.any(ratio > gap_threshold):
                break
            used += 1
            z = _tree_coords(tree, bone, t.astype(np.float64))
            along = np.zeros_like(le)
            np.divide(np.abs(z[e[:, 0]] - z[e[:, 1]]).sum(axis=1), le, out=along, where=ok)
            ratio = np.maximum(ratio, along)
            gap = ok & (ratio > gap_threshold)
            need = np.ceil(_REGION_RINGS * (1.0 + k) * ratio[gap] / gap_threshold).astype(np.int64)
            seed = np.zeros(v, np.int64)
            np.maximum.at(seed, e[gap, 0], need)
            np.maximum.at(seed, e[gap, 1], need)
            fi = np.nonzero(_dilate(topology, seed))[0]
            ge = e[gap]
            jump = w[gap, None] * (z[ge[:, 0]] - z[ge[:, 1]])
            div = np.zeros_like(z)
            np.add.at(div, ge[:, 0], -jump)
            np.add.at(div, ge[:, 1], jump)
            mat = (sp.diags(deg[fi] * (1.0 + _SCREEN)) - lap[fi][:, fi]).tocsc()
            zf = z[fi] + strength * spla.splu(mat).solve(div[fi])
            bone[fi], t[fi] = _reproject(tree, zf, bone[fi])
    out = make_binding(positions, binding.bones, bone, t, bind_joints)
    out.quality = dict(binding.quality)
    out.quality["smooth_passes_used"] = used
    return out


@quiet_underflow
def binding_quality(
    binding: Binding, topology: MeshTopology, *, gap_threshold: float = DEFAULT_GAP_THRESHOLD
) -> dict:
    """Gap statistics between attachments of adjacent control points, relative to their edge length.

    The research calls a gap two neighbouring vertices whose attachment points lie far apart on the
    skeleton (it shows them as discontinuities once joints rotate) without giving a number; here an edge
    (v_i, v_j) is a gap when |a_i - a_j| > gap_threshold * |v_i - v_j| (3D distance of the attachments,
    default 3 x the edge length). After the default smoothing the generated cylinder, box, plus and humanoid
    have none (tests/unit/test_skinning_binding_characters.py).

    gap_mean / gap_max: mean / max of |a_i - a_j| / |v_i - v_j| over edges of non-zero length;
    gaps: edges whose ratio exceeds gap_threshold; gap_vertices: control points on such an edge; plus
    scale-vector length stats, t clamping counts and bones no point attaches to.
    """
    if not gap_threshold > 0:
        raise ValueError(f"gap_threshold must be > 0, got {gap_threshold!r}")
    e = topology.edges.astype(np.int64)
    le = _edge_lengths(topology.positions, e)
    ok = le > 0
    full = _edge_ratio(binding.attach, e, le)
    ratio = full[ok]
    on_gap = np.zeros(topology.n_control, bool)
    on_gap[e[full > gap_threshold].ravel()] = True
    slen = np.linalg.norm(binding.scale.astype(np.float64), axis=1)
    per_bone = np.bincount(binding.bone, minlength=binding.bones.count)
    return {
        "gap_mean": float(ratio.mean()) if ratio.size else 0.0,
        "gap_max": float(ratio.max()) if ratio.size else 0.0,
        "gaps": int((ratio > gap_threshold).sum()),
        "gap_threshold": float(gap_threshold),
        "gap_vertices": int(on_gap.sum()),
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
    Then up to `smooth_passes` passes of smoothing and reprojection (`smooth_binding`; they stop once no
    gap is left). quality holds `binding_quality` of the final binding, the method, the passes asked for and
    used, and gaps / gap_max / gap_mean before smoothing.
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
    used = 0
    if smooth_passes:
        binding = smooth_binding(binding, topology, bj, passes=smooth_passes, parents=par, gap_threshold=gap_threshold)
        used = binding.quality["smooth_passes_used"]
    binding.quality = binding_quality(binding, topology, gap_threshold=gap_threshold)
    binding.quality.update(
        method=method,
        smooth_passes=int(smooth_passes),
        smooth_passes_used=int(used),
        gaps_before_smoothing=before["gaps"],
        gap_max_before_smoothing=before["gap_max"],
        gap_mean_before_smoothing=before["gap_mean"],
    )
    return binding
