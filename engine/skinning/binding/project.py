"""The binding methods proper: direct projection (`bind_project`, eq. 12), planar dividers (`bind_planar`,
eq. 13), seeding by skin weights (`bind_from_weights`), and the `Binding` they give (`make_binding`)."""
from __future__ import annotations

import numpy as np

from engine.math.numerics import quiet_underflow
from engine.skinning.binding.bones import _CHUNK_ELEMENTS, _check_skeleton, _scale_of, joint_location_groups
from engine.skinning.types import Binding, Bones, bone_endpoints

__all__ = ["segment_projection", "nearest_bone", "bind_project", "bind_from_weights", "bind_planar", "make_binding",
           "MIN_WEIGHT_SHARE", "weight_support"]

MIN_WEIGHT_SHARE = 0.25
"""A bone may carry a point when its parent joint (whose rotation moves the bone's points) holds at least this
share of the point's skin weight (or the largest share any bone's joint holds, where that is less)."""


def weight_support(
    joints: np.ndarray, weights: np.ndarray, bones: Bones, min_share: float = MIN_WEIGHT_SHARE
) -> np.ndarray:
    """(V,B) bool: the bones whose parent joint carries a meaningful share of every point's skin weight.

    joints, weights (V,K): the point's influences (weights normalised here; K any). Bone b may carry point i
    when w_i(parent_joint[b]) >= min(min_share, max_b' w_i(parent_joint[b'])) and > 0: the springs carry a
    point with its bone's parent joint (its rotation and the joint blend at the bone's ends), so a point on
    such a bone moves with a joint LBS moves it with. A point none of whose joints carries a bone (weights only
    on joints with no bone of their own) may use every bone.
    """
    jn = np.asarray(joints).astype(np.int64)
    w = np.asarray(weights, np.float64)
    if jn.ndim != 2 or w.shape != jn.shape:
        raise ValueError(f"joints and weights must have one shape (V, K), got {jn.shape} and {w.shape}")
    if not 0.0 < float(min_share) <= 1.0:
        raise ValueError(f"min_share must be in (0, 1], got {min_share!r}")
    w = np.where(np.isfinite(w) & (w > 0), w, 0.0)
    w = w / np.maximum(w.sum(axis=1, keepdims=True), 1e-30)
    carrier = np.asarray(bones.parent_joint, np.int64)
    share = np.zeros((jn.shape[0], carrier.shape[0]))
    for k in range(jn.shape[1]):  # K influences (4 in glTF): (V,B) per influence
        share += np.where(jn[:, k, None] == carrier[None, :], w[:, k, None], 0.0)
    best = share.max(axis=1, keepdims=True) if carrier.size else np.zeros((jn.shape[0], 1))
    allowed = (share >= np.minimum(float(min_share), best) * (1.0 - 1e-6)) & (share > 0)
    allowed[best[:, 0] <= 0] = True
    return allowed


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


def _check_allowed(allowed: np.ndarray | None, n: int, nb: int) -> np.ndarray | None:
    if allowed is None:
        return None
    a = np.asarray(allowed, bool)
    if a.shape != (n, nb):
        raise ValueError(f"allowed must have shape ({n}, {nb}) (points x bones), got {a.shape}")
    return a | ~a.any(axis=1, keepdims=True)  # a point allowing no bone may use any


def _check_points(positions: np.ndarray) -> np.ndarray:
    pts = np.asarray(positions, np.float32)
    if pts.ndim != 2 or pts.shape[1] != 3:
        raise ValueError(f"positions must have shape (V,3), got {pts.shape}")
    return pts


@quiet_underflow
def bind_project(
    positions: np.ndarray, bones: Bones, bind_joints: np.ndarray, *, allowed: np.ndarray | None = None
) -> tuple[np.ndarray, np.ndarray]:
    """Direct binding (eq. 12): (bone (V,), t (V,)) of the closest projection onto any bone (of the point's
    `allowed` (V,B) bones where given, e.g. `weight_support`)."""
    pts = _check_points(positions)
    p, c = bone_endpoints(bones, np.asarray(bind_joints, np.float32))
    bone, t, _ = nearest_bone(pts, p, c, _check_allowed(allowed, pts.shape[0], bones.count))
    return bone, t


@quiet_underflow
def bind_from_weights(
    positions: np.ndarray, joints: np.ndarray, weights: np.ndarray, bones: Bones, bind_joints: np.ndarray
) -> tuple[np.ndarray, np.ndarray]:
    """Binding seeded by skin weights (V,K), any K influences: project onto the bones touching the largest-weight joint.

    A point whose largest-weight joint touches no bone (e.g. all its bones were zero-length) is projected
    onto every bone.
    """
    pts = _check_points(positions)
    jn = np.asarray(joints).astype(np.int64)
    w = np.asarray(weights, np.float32)
    if jn.ndim != 2 or jn.shape[0] != pts.shape[0] or jn.shape[1] < 1 or w.shape != jn.shape:
        raise ValueError(f"joints and weights must have one shape ({pts.shape[0]}, K), got {jn.shape} and {w.shape}")
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
    allowed: np.ndarray | None = None,
) -> tuple[np.ndarray, np.ndarray]:
    """Planar binding with joint dividers (eq. 13): (bone (V,), t (V,)).

    A point belongs to a bone when it lies on the bone's side of every divider plane at both ends; among the
    bones it belongs to, the closest is taken; a point belonging to none binds to the closest bone by
    projection. t = d_p / (d_p + d_c) with d_p, d_c the (clamped) distances to the bone's divider planes at
    its parent and child ends (the nearest one where an end has several).

    plane_normals: per-joint override of the divider between the joint's incoming and outgoing bones, as a
    dict {joint: normal} or a (J,3) array with NaN rows for "automatic"; the orientation does not matter.
    allowed: optional (V,B) bool (`weight_support`): only those bones count, both for membership and for the
    closest-bone fallback, so a point sits on a bone its weights move it with, not on the nearest one.
    """
    pts = _check_points(positions)
    bj, par = _check_skeleton(bind_joints, parents)
    allow = _check_allowed(allowed, pts.shape[0], bones.count)
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
        if allow is not None:
            inside &= allow[s:e]
            d2 = np.where(allow[s:e], d2, np.inf)
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


def _attach(p: np.ndarray, c: np.ndarray, bone: np.ndarray, t: np.ndarray) -> np.ndarray:
    """a = p + t (c - p) on every point's bone, float32 (the one formula `make_binding` stores)."""
    p = np.asarray(p, np.float32)
    pb = np.take(p, bone, axis=0)
    return pb + np.asarray(t, np.float32)[:, None] * (np.take(np.asarray(c, np.float32), bone, axis=0) - pb)
