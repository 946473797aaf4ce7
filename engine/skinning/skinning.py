"""Numpy reference skinning deformers: LBS, DQS, rigid attachment skinning and IRS (research ch. 4.1).

All functions are vectorised over vertices (loops only over the K influences) and follow the pose inputs of
engine/skinning/types.py: bind_joints / posed_joints (J,4,4) joint world matrices, skin_mats (J,4,4) =
posed_joints @ inverse_bind, joints/weights (V,K) with K influences per vertex (4 per glTF JOINTS_n/WEIGHTS_n
set; K = 4 is the common case, any K >= 1 is accepted). Outputs are float32. Every deformer returns the bind
positions at the bind pose (skin_mats = identity, posed_joints = bind_joints).

Design notes
- LBS blends the 4 skin matrices per vertex; normals use the cofactor of the blended 3x3 (correct under
  non-uniform scale, no inverse needed).
- DQS (Kavan et al.): each skin matrix is split by polar decomposition into a rigid part [R | t] and a
  symmetric stretch S (M = [R t] [S 0]). The stretch is blended linearly and applied first, the rigid parts
  are blended as dual quaternions (so pure rigid poses are exact DQS; scaled joints do not shear the
  rotation blend). Before blending, every influence's quaternion is flipped into the hemisphere of the
  vertex's largest-weight joint (antipodality: q and -q are the same rotation).
- rigid: attachment skinning with bone length changes: a' = p' + t (c' - p'), v' = a' + u R(p) s, with R(p) the
  rotation part (polar decomposition) of the parent joint's bind->pose transform posed @ inv(bind) and u the
  pose's scene units per bind unit (`springs.pose_unit`: the skeleton root's uniform scale between bind and pose;
  1 unless the mesh is given in other units than its joints are posed in, a mesh in the units of a scaled
  armature, whose bind-unit s would otherwise sit on scene-unit attachments and collapse onto the bones).
- IRS (eqs. 14-18): on top of `rigid`, the scale vector is rotated by an increment that takes up to half of
  each joint's bend near that joint. The bend of joint j is the world-space relative rotation
  D = R(j) R(q)^T between the bone leaving j and the bone arriving at j (q: the parent joint of the arriving
  bone). A point at t on bone (p, c) gets Delta_p = D_p^(-p_w/2) near p and Delta_c = D_c^(c_w/2) near c, with
  p_w, c_w from eq. 14, so both sides of a joint meet at the same half-way rotation. Where both ranges
  overlap the increments are blended (eq. 17): "nlerp" blends the quaternions and renormalises (a rotation,
  |s| kept); "matrix" blends the matrices literally as eq. 17 writes (may shorten s). Joints at the same
  position (zero-length links) count as one location: the arriving bone is looked up through them.
  Length correction (optional, end of 4.1): v''' = v_s + d0 (v'' - v_s) / |v'' - v_s| with v_s the closest
  point on the posed skeleton and d0 the point's distance to the skeleton at bind, which keeps the
  distance from the skeleton at bind (and keeps the bind pose a fixed point). Inside sharp bends that step
  can push a point towards the other bone; per point it is kept only where the distance to the skeleton
  ends closer to d0 than before. d0 is measured at bind, so it is scaled by u like s.
"""
from __future__ import annotations

from typing import Any

import numpy as np

from engine.math import quat as Q
from engine.math.numerics import quiet_underflow
from engine.skinning import registry
from engine.skinning.binding.bones import joint_location_groups
from engine.skinning.binding.pipeline import per_control
from engine.skinning.binding.project import nearest_bone
from engine.skinning.types import Binding, Bones, MeshTopology, bone_endpoints, joint_rotations

__all__ = [
    "lbs",
    "lbs_normals",
    "dqs",
    "dqs_normals",
    "rigid",
    "irs",
    "skin_control_points",
    "dual_quat_parts",
    "polar_rotations",
    "bend_refs",
    "quat_from_matrix",
    "quat_to_matrix",
    "quat_rotate",
    "SKINNING_METHODS",
]

SKINNING_METHODS = registry.skinning_methods()




# ----------------------------------------------------------------------------------------------------------
# small batched math (quaternions xyzw come from engine.math.quat)

quat_from_matrix = Q.from_matrix
"""Unit quaternions (w >= 0) of rotation matrices; kept importable from here (the GPU spring stages use it)."""
quat_to_matrix = Q.to_matrix
quat_rotate = Q.rotate


def _svd_rotations(a: np.ndarray) -> np.ndarray:
    """The nearest proper rotation of each (N,3,3) matrix by SVD (the last singular vector flipped where
    U V^T would mirror), float64."""
    u, _, vt = np.linalg.svd(np.asarray(a, np.float64))
    u = u.copy()
    u[:, :, 2] *= np.where(np.linalg.det(u @ vt) < 0, -1.0, 1.0)[:, None]
    return u @ vt


_NEXT, _AFTER = [1, 2, 0], [2, 0, 1]  # index i -> i + 1, i + 2 (mod 3): cross products of whole arrays


def polar_rotations(a: np.ndarray, tol: float = 1e-13, max_iter: int = 40) -> np.ndarray:
    """Rotation factor R of the polar decomposition A = R S of (N,3,3) matrices, float64: what
    :func:`_svd_rotations` gives, to ~1e-15, without a batched SVD.

    Why: a batched 3x3 SVD costs ~2 us per matrix in numpy, the whole per-frame DQS pose upload of a crowd.
    Higham's scaled Newton iteration X <- (X / z + z cof(X) / det X) / 2, z = det(X)^(1/3)
    (cof(X) / det X = X^-T), converges in 2-3 steps for the near-rigid skin matrices of a pose and in under
    ten for strong stretch; it runs on (3,3,N) arrays, cross products as whole-array index shuffles. Matrices
    with det <= 0 (mirrored, singular: Newton would find an improper or no factor) or not converged take the
    SVD."""
    n = a.shape[0]
    out = np.empty((n, 3, 3))
    x = np.ascontiguousarray(np.asarray(a, np.float64).transpose(1, 2, 0))  # x[i, j] = A[:, i, j]
    idx = np.arange(n)
    fallback = idx[:0]
    for it in range(max_iter):
        if not idx.size:
            break
        xn, xa = x[_NEXT], x[_AFTER]
        cof = xn[:, _NEXT] * xa[:, _AFTER] - xa[:, _NEXT] * xn[:, _AFTER]  # columns cross(x_j+1, x_j+2)
        det = np.einsum("in,in->n", x[:, 0], cof[:, 0])
        if it == 0:
            good = det > 1e-9 * np.abs(x).max(axis=(0, 1)) ** 3
            fallback = idx[~good]
            x, cof, det, idx = x[..., good], cof[..., good], det[good], idx[good]
        z = np.cbrt(det)
        nx = (0.5 / z) * x + (0.5 * z / det) * cof
        done = np.abs(nx - x).max(axis=(0, 1)) < tol
        out[idx[done]] = nx[..., done].transpose(2, 0, 1)
        x, idx = nx[..., ~done], idx[~done]
    rest = np.concatenate([fallback, idx])
    if rest.size:
        out[rest] = _svd_rotations(a[rest])
    return out


def _stretch(r: np.ndarray, a: np.ndarray) -> np.ndarray:
    """Symmetric factor S = sym(R^T A) of the polar decomposition A = R S, given its rotation R."""
    s = np.swapaxes(r, 1, 2) @ a
    return 0.5 * (s + np.swapaxes(s, 1, 2))


def _polar(a: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Polar decomposition A = R S (R proper rotation, S symmetric), batched (N,3,3), float64."""
    a = np.asarray(a, np.float64)
    r = _svd_rotations(a)
    return r, _stretch(r, a)


def _check_influences(positions: np.ndarray, joints: np.ndarray, weights: np.ndarray, skin_mats: np.ndarray):
    v = np.asarray(positions, np.float32)
    j = np.asarray(joints).astype(np.intp)
    w = np.asarray(weights, np.float32)
    m = np.asarray(skin_mats, np.float32)
    if v.ndim != 2 or v.shape[1] != 3:
        raise ValueError(f"positions must have shape (V,3), got {v.shape}")
    if j.ndim != 2 or j.shape[0] != v.shape[0] or j.shape[1] < 1 or w.shape != j.shape:
        raise ValueError(f"joints and weights must have one shape ({v.shape[0]}, K), K >= 1 influences, got "
                         f"{j.shape} and {w.shape}")
    if m.ndim != 3 or m.shape[1:] != (4, 4):
        raise ValueError(f"skin_mats must have shape (J,4,4), got {m.shape}")
    if j.size and (j.min() < 0 or j.max() >= m.shape[0]):
        raise ValueError(f"joint indices must lie in [0, {m.shape[0] - 1}], got [{j.min()}, {j.max()}]")
    return v, j, w, m


# ----------------------------------------------------------------------------------------------------------
# linear blend skinning


def _blend_matrices(joints: np.ndarray, weights: np.ndarray, mats: np.ndarray) -> np.ndarray:
    """Per-vertex sum_k w_k M[j_k] of the top 3 rows, (V,3,4)."""
    # np.take along axis 0 is much faster than fancy indexing for gathering whole matrices
    m34 = np.ascontiguousarray(mats[:, :3, :])
    out = weights[:, 0, None, None] * np.take(m34, joints[:, 0], axis=0)
    for k in range(1, joints.shape[1]):
        out += weights[:, k, None, None] * np.take(m34, joints[:, k], axis=0)
    return out


@quiet_underflow
def lbs(positions: np.ndarray, joints: np.ndarray, weights: np.ndarray, skin_mats: np.ndarray) -> np.ndarray:
    """Linear blend skinning: v' = sum_k w_k (M_jk @ v), (V,3) float32."""
    v, j, w, m = _check_influences(positions, joints, weights, skin_mats)
    b = _blend_matrices(j, w, m)
    return (np.einsum("vij,vj->vi", b[:, :, :3], v) + b[:, :, 3]).astype(np.float32)


def _cofactor_apply(a: np.ndarray, n: np.ndarray) -> np.ndarray:
    """cof(A) @ n for (V,3,3) A: det(A) A^-T n, i.e. the normal transform, without an inverse."""
    c0 = np.cross(a[:, :, 1], a[:, :, 2])
    c1 = np.cross(a[:, :, 2], a[:, :, 0])
    c2 = np.cross(a[:, :, 0], a[:, :, 1])
    return c0 * n[:, 0:1] + c1 * n[:, 1:2] + c2 * n[:, 2:3]


def _unit(x: np.ndarray) -> np.ndarray:
    nrm = np.linalg.norm(x, axis=1, keepdims=True)
    out = np.zeros_like(x)
    np.divide(x, nrm, out=out, where=nrm > 0)
    return out


@quiet_underflow
def lbs_normals(normals: np.ndarray, joints: np.ndarray, weights: np.ndarray, skin_mats: np.ndarray) -> np.ndarray:
    """Normals under LBS: the blended 3x3's cofactor applied to n, renormalised (zero where it collapses)."""
    n, j, w, m = _check_influences(normals, joints, weights, skin_mats)
    b = _blend_matrices(j, w, m)
    return _unit(_cofactor_apply(b[:, :, :3], n)).astype(np.float32)


# ----------------------------------------------------------------------------------------------------------
# dual quaternion skinning


def dual_quat_parts(mats: np.ndarray, segments: np.ndarray | None = None, *, fast: bool = False
                    ) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
    """The DQS split of skin matrices (J,4,4), shared by the numpy reference and the GPU pose uploads.

    Returns (qr (J,4) float32, qd (J,4) float32, S (J,3,3) float64, stretched (J,) bool): polar
    M[:3,:3] = R S, qr = quat(R) (w >= 0), qd = 0.5 (t, 0) qr. ``stretched`` is the identity rule: a skin's
    stretch is blended only when some S of the skin is not within 1e-6 of the identity (np.allclose with
    atol=1e-6); otherwise all its joints are rigid (the blend is skipped, the stretch is exactly I).
    ``segments``: first joint of each skin when ``mats`` stacks the joints of several instances (the rule
    applies per skin; None: one skin). ``fast``: the polar rotations by :func:`polar_rotations` (Newton)
    instead of the SVD (same results to ~1e-15; the per-frame upload)."""
    m = np.asarray(mats, np.float64)
    a = m[:, :3, :3]
    r = polar_rotations(a) if fast else _svd_rotations(a)
    s = _stretch(r, a)
    qr = Q.from_matrix(r)
    t = np.concatenate([m[:, :3, 3], np.zeros((m.shape[0], 1))], 1)
    qd = 0.5 * Q.multiply(t, qr)
    eye = np.eye(3)
    bad = np.asarray(~(np.abs(s - eye) <= 1e-6 + 1e-5 * eye).all(axis=(1, 2)))  # np.allclose(s, I, atol=1e-6) per joint
    if not m.shape[0]:
        stretched = bad
    elif segments is None:
        stretched = np.full(m.shape[0], bool(bad.any()))
    else:
        seg = np.asarray(segments, np.int64)
        stretched = np.repeat(np.logical_or.reduceat(bad, seg), np.diff(np.append(seg, m.shape[0])))
    return qr.astype(np.float32), qd.astype(np.float32), s, stretched


def _dq_parts(m: np.ndarray):
    """Per joint: rotation quaternion (J,4), dual part (J,4), stretch S (J,3,3) or None when all rigid."""
    qr, qd, s, stretched = dual_quat_parts(m)
    return qr, qd, (s.astype(np.float32) if stretched.any() else None)


def _dq_blend(j: np.ndarray, w: np.ndarray, qr: np.ndarray, qd: np.ndarray):
    """Blended, normalised (real, dual) per vertex with antipodal flips towards the largest-weight joint."""
    n = j.shape[0]
    q = np.take(qr, j, axis=0)  # (V,K,4): influence k, quaternion component c
    pivot = q[np.arange(n), np.argmax(w, axis=1)]
    sw = np.where(np.einsum("vkc,vc->vk", q, pivot) < 0, -w, w)
    br = np.einsum("vk,vkc->vc", sw, q)
    bd = np.einsum("vk,vkc->vc", sw, np.take(qd, j, axis=0))
    nrm = np.sqrt(np.einsum("vc,vc->v", br, br))[:, None]
    ok = nrm > 0
    inv = np.zeros_like(nrm)
    np.divide(1.0, nrm, out=inv, where=ok)
    c0 = np.where(ok, br * inv, np.array([0, 0, 0, 1], np.float32))
    return c0, bd * inv


@quiet_underflow
def dqs(positions: np.ndarray, joints: np.ndarray, weights: np.ndarray, skin_mats: np.ndarray) -> np.ndarray:
    """Dual-quaternion skinning (V,3) float32; stretch of the skin matrices blended linearly first."""
    v, j, w, m = _check_influences(positions, joints, weights, skin_mats)
    qr, qd, stretch = _dq_parts(m)
    if stretch is not None:
        sv = np.zeros_like(v)
        for k in range(j.shape[1]):
            sv += w[:, k, None] * np.einsum("vij,vj->vi", np.take(stretch, j[:, k], axis=0), v)
        v = sv
    c0, ce = _dq_blend(j, w, qr, qd)
    r, rw = c0[:, :3], c0[:, 3:]
    d, dw = ce[:, :3], ce[:, 3:]
    trans = 2.0 * (rw * d - dw * r + np.cross(r, d))
    return (Q.rotate(c0, v) + trans).astype(np.float32)


@quiet_underflow
def dqs_normals(normals: np.ndarray, joints: np.ndarray, weights: np.ndarray, skin_mats: np.ndarray) -> np.ndarray:
    """Normals under DQS: cofactor of the blended stretch, then the blended rotation; renormalised."""
    n, j, w, m = _check_influences(normals, joints, weights, skin_mats)
    qr, qd, stretch = _dq_parts(m)
    if stretch is not None:
        sb = np.zeros((n.shape[0], 3, 3), np.float32)
        for k in range(j.shape[1]):
            sb += w[:, k, None, None] * np.take(stretch, j[:, k], axis=0)
        n = _cofactor_apply(sb, n)
    c0, _ = _dq_blend(j, w, qr, qd)
    return _unit(Q.rotate(c0, n)).astype(np.float32)


# ----------------------------------------------------------------------------------------------------------
# attachment skinning: rigid and IRS


def _check_binding(binding: Binding, bind_joints: np.ndarray, posed_joints: np.ndarray) -> None:
    nj = np.asarray(bind_joints).shape[0]
    bones = binding.bones
    if bones.count and int(bones.parent_joint.max()) >= nj:
        raise ValueError(f"binding refers to joint {int(bones.parent_joint.max())}, skeleton has {nj} joints")
    if np.asarray(posed_joints).shape != np.asarray(bind_joints).shape:
        raise ValueError(
            f"posed_joints shape {np.asarray(posed_joints).shape} != bind_joints shape {np.asarray(bind_joints).shape}"
        )


def _pose_unit(bind_joints: np.ndarray, posed_joints: np.ndarray, parents: np.ndarray | None) -> float:
    """The pose's scene units per bind unit (`springs.pose_unit`: its skeleton root's uniform scale between bind
    and pose; the GPU pose upload puts the same value in the bone records); parents None: joint 0 is the root."""
    from engine.skinning.springs.frames import pose_unit

    nj = np.asarray(bind_joints).shape[0]
    par = np.full(nj, -1) if parents is None else np.asarray(parents)
    return pose_unit(bind_joints, par, posed_joints)


def _rigid_parts(binding: Binding, bind_joints: np.ndarray, posed_joints: np.ndarray,
                 parents: np.ndarray | None = None):
    """(a' (V,3), s' = u R s (V,3), joint rotations (J,3,3) float64, posed endpoints P', C', pose unit u)."""
    _check_binding(binding, bind_joints, posed_joints)
    rot = joint_rotations(bind_joints, posed_joints)
    pp, cp = bone_endpoints(binding.bones, np.asarray(posed_joints, np.float32))
    b = binding.bone
    t = binding.t[:, None]
    pb = np.take(pp, b, axis=0)
    a = pb + t * (np.take(cp, b, axis=0) - pb)
    rb = np.take(rot.astype(np.float32)[binding.bones.parent_joint], b, axis=0)  # (V,3,3)
    s = np.einsum("vij,vj->vi", rb, binding.scale)
    unit = _pose_unit(bind_joints, posed_joints, parents)
    if unit != 1.0:  # bind-unit offsets on scene-unit attachments (module docstring); float32 as the GPU's
        s = s * np.float32(unit)
    return a, s, rot, pp, cp, unit


@quiet_underflow
def rigid(binding: Binding, bind_joints: np.ndarray, posed_joints: np.ndarray,
          parents: np.ndarray | None = None) -> np.ndarray:
    """Rigid attachment skinning: v' = p' + t (c' - p') + u R(p) s, (V,3) float32; u: the pose unit of the
    skeleton with these parents (J,) (module docstring; None: joint 0 is taken for the root)."""
    a, s, _, _, _, _ = _rigid_parts(binding, bind_joints, posed_joints, parents)
    return (a + s).astype(np.float32)


def _bend_refs(bones: Bones, bind_joints: np.ndarray, parents: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Per bone, the joint whose rotation the bend is measured against at the parent end (-1: none) and the
    joint driving the bones that leave the child end (-1: none). Coincident joints are one location."""
    bj = np.asarray(bind_joints, np.float64)
    par = np.asarray(parents).astype(np.int64)
    nj = par.shape[0]
    pos = bj[:, :3, 3]
    scale = max(float(np.linalg.norm(pos.max(0) - pos.min(0))), 1e-9)
    top = joint_location_groups(bj, par, 1e-6 * scale)
    start_ref = par[top[bones.parent_joint]]  # parent of the arriving bone at the parent end's location
    has_out = np.zeros(nj, bool)
    has_out[bones.parent_joint] = True
    # first joint (lowest index) with outgoing bones in every location group
    grp_first = np.full(nj, -1, np.int64)
    cand = np.nonzero(has_out)[0][::-1]
    grp_first[top[cand]] = cand
    child = bones.child_joint.astype(np.int64)
    cc = np.maximum(child, 0)
    end_ref = np.where(child < 0, -1, np.where(has_out[cc], cc, grp_first[top[cc]]))
    return start_ref.astype(np.int64), end_ref.astype(np.int64)


bend_refs = _bend_refs
"""Public name of `_bend_refs` (the GPU IRS/spring stages need the same per-bone reference joints)."""


def irs_weights(binding: Binding, p_inf: np.ndarray, c_inf: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Eq. 14: per control point the share (p_w, c_w) in [0, 1] of the bend at the bone's parent joint and at
    its child joint, from t and the per-joint influence ranges p_i, c_i ((J,) each). float64 (V,) arrays; the GPU
    set-up (gpu_spring) packs the same values."""
    bones = binding.bones
    b = binding.bone
    t = np.asarray(binding.t, np.float64)
    pi_b = np.asarray(p_inf, np.float64)[bones.parent_joint][b]
    ci_b = np.asarray(c_inf, np.float64)[np.maximum(bones.child_joint, 0)][b]
    pw = np.zeros_like(t)
    np.divide(t, pi_b, out=pw, where=pi_b > 0)
    pw = np.where(pi_b > 0, np.clip(1.0 - pw, 0.0, 1.0), 0.0)
    cw = np.zeros_like(t)
    np.divide(t - ci_b, 1.0 - ci_b, out=cw, where=ci_b < 1)
    cw = np.where(ci_b < 1, np.clip(cw, 0.0, 1.0), 0.0)
    cw = np.where(bones.child_joint[b] >= 0, cw, 0.0)
    return pw, cw


def _axis_half_angle(q: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Unit axis (N,3) and half angle (N,) of unit quaternions with w >= 0 (axis 0 for the identity)."""
    sin_half = np.linalg.norm(q[:, :3], axis=1)
    half = np.arctan2(sin_half, q[:, 3])  # theta / 2, accurate for small angles too
    axis = np.zeros_like(q[:, :3])
    np.divide(q[:, :3], sin_half[:, None], out=axis, where=sin_half[:, None] > 0)
    return axis, half


def _fraction_quat(axis: np.ndarray, half: np.ndarray, f: np.ndarray) -> np.ndarray:
    """q^f per point for q given by axis (N,3) and half angle (N,), fractions f (N,); float32."""
    ang = (f * half).astype(np.float32)
    out = np.empty((ang.shape[0], 4), np.float32)
    out[:, :3] = axis * np.sin(ang)[:, None]
    out[:, 3] = np.cos(ang)
    return out


def _influence(value: Any, nj: int, name: str) -> np.ndarray:
    arr = np.asarray(value, np.float32)
    if arr.ndim == 0:
        arr = np.full(nj, float(arr), np.float32)
    if arr.shape != (nj,):
        raise ValueError(f"{name} must be a scalar or shape ({nj},), got {arr.shape}")
    if not np.all((arr >= 0) & (arr <= 1)):
        raise ValueError(f"{name} values must lie in [0, 1], got range [{arr.min()}, {arr.max()}]")
    return arr


@quiet_underflow
def irs(
    binding: Binding,
    bind_joints: np.ndarray,
    posed_joints: np.ndarray,
    parents: np.ndarray,
    *,
    influence: tuple[Any, Any] = (0.5, 0.5),
    length_correction: bool = False,
    blend: str = "nlerp",
) -> np.ndarray:
    """Incremental rotation skinning (eqs. 14-18), (V,3) float32.

    influence = (p_i, c_i), each a scalar or a (J,) per-joint array in [0, 1], used as eq. 14 writes them:
    p_i of a bone's parent joint (rotation ramps over t in [0, p_i]), c_i of its child joint (ramps over
    t in [c_i, 1]); tip bones have no child-end increment. blend: "nlerp" or "matrix" (eq. 17 literally).
    """
    if blend not in ("nlerp", "matrix"):
        raise ValueError(f"blend must be 'nlerp' or 'matrix', got {blend!r}")
    nj = np.asarray(bind_joints).shape[0]
    if np.asarray(parents).shape != (nj,):
        raise ValueError(f"parents must have shape ({nj},), got {np.asarray(parents).shape}")
    try:
        pi_val, ci_val = influence
    except (TypeError, ValueError):
        raise ValueError(f"influence must be a pair (p_i, c_i), got {influence!r}") from None
    p_inf = _influence(pi_val, nj, "influence p_i")
    c_inf = _influence(ci_val, nj, "influence c_i")
    a, s, rot, pp, cp, unit = _rigid_parts(binding, bind_joints, posed_joints, parents)
    bones = binding.bones
    start_ref, end_ref = _bend_refs(bones, bind_joints, parents)

    # per-bone bend quaternions at both ends (B,4), w >= 0
    q_joint = Q.from_matrix(rot)
    q_par = q_joint[bones.parent_joint]
    ident = np.array([0.0, 0.0, 0.0, 1.0])
    q_start = np.where((start_ref >= 0)[:, None],
                       Q.multiply(q_par, Q.conjugate(q_joint[np.maximum(start_ref, 0)])), ident)
    q_end = np.where((end_ref >= 0)[:, None], Q.multiply(q_joint[np.maximum(end_ref, 0)], Q.conjugate(q_par)), ident)
    q_start, q_end = Q.canonical(q_start), Q.canonical(q_end)

    # eq. 14 weights
    b = binding.bone
    pw, cw = irs_weights(binding, p_inf, c_inf)
    pw, cw = pw.astype(np.float32), cw.astype(np.float32)

    # eqs. 15-16: Delta_p = D_p^(-p_w/2), Delta_c = D_c^(c_w/2)
    axis_s, half_s = _axis_half_angle(q_start)
    axis_e, half_e = _axis_half_angle(q_end)
    dp = _fraction_quat(np.take(axis_s.astype(np.float32), b, axis=0), half_s[b], -0.5 * pw)
    dc = _fraction_quat(np.take(axis_e.astype(np.float32), b, axis=0), half_e[b], 0.5 * cw)
    tot = pw + cw
    # eq. 17
    if blend == "nlerp":
        q = pw[:, None] * dp + cw[:, None] * dc
        q = np.where((tot > 0)[:, None], q, ident.astype(np.float32))
        q /= np.sqrt(np.einsum("vc,vc->v", q, q))[:, None]
        s2 = Q.rotate(q, s)
    else:
        wsum = np.where(tot > 0, tot, 1.0)
        m = (pw / wsum)[:, None, None] * Q.to_matrix(dp) + (cw / wsum)[:, None, None] * Q.to_matrix(dc)
        m = np.where((tot > 0)[:, None, None], m, np.eye(3))
        s2 = np.einsum("vij,vj->vi", m.astype(np.float32), s)
    v2 = a + s2  # eq. 18

    if length_correction:
        bf = np.asarray(bind_joints, np.float32)
        pb, cb = bone_endpoints(bones, bf)
        bind_pos = binding.attach + binding.scale
        _, _, d0 = nearest_bone(bind_pos, pb, cb)
        if unit != 1.0:  # the bind distance in the pose's units, as s
            d0 = d0 * np.float32(unit)
        kb, kt, d = nearest_bone(v2, pp, cp)
        pk = np.take(pp, kb, axis=0)
        vs = pk + kt[:, None] * (np.take(cp, kb, axis=0) - pk)
        ratio = np.ones_like(d)
        np.divide(d0, d, out=ratio, where=d > 0)
        v3 = vs + ratio[:, None] * (v2 - vs)
        # inside sharp bends pushing away from one bone can push a point towards another: keep the
        # corrected point only where it really is closer to its bind distance from the skeleton
        _, _, d3 = nearest_bone(v3, pp, cp)
        better = np.abs(d3 - d0) <= np.abs(d - d0)
        v2 = np.where(better[:, None], v3, v2)
    return v2.astype(np.float32)


# ----------------------------------------------------------------------------------------------------------
# dispatcher


@quiet_underflow
def skin_control_points(
    method: str,
    topology: MeshTopology,
    bind_joints: np.ndarray,
    posed_joints: np.ndarray,
    *,
    parents: np.ndarray | None = None,
    binding: Binding | None = None,
    joints: np.ndarray | None = None,
    weights: np.ndarray | None = None,
    inverse_bind: np.ndarray | None = None,
    **options: Any,
) -> np.ndarray:
    """Deform the control points of `topology` with `method` in SKINNING_METHODS; (V,3) float32.

    lbs/dqs need joints and weights ((D,K) per display vertex: the representative display vertex of each
    control point is used; or (V,K)); skin_mats = posed_joints @ inverse_bind (default inv(bind_joints)).
    rigid needs binding (and takes parents: the root whose pose unit scales the offsets); irs needs binding and
    parents (options: influence, length_correction, blend).
    """
    if method not in SKINNING_METHODS:
        raise ValueError(f"method must be one of {SKINNING_METHODS}, got {method!r}")
    if method in registry.vertex_methods():
        if joints is None or weights is None:
            raise ValueError(f"method {method!r} needs joints and weights")
        ib = (np.linalg.inv(np.asarray(bind_joints, np.float64)) if inverse_bind is None
              else np.asarray(inverse_bind, np.float64))
        skin = (np.asarray(posed_joints, np.float64) @ ib).astype(np.float32)
        fn = lbs if method == "lbs" else dqs
        if options:
            raise ValueError(f"unexpected options for {method!r}: {sorted(options)}")
        return fn(topology.positions, per_control(topology, joints), per_control(topology, weights), skin)
    if binding is None:
        raise ValueError(f"method {method!r} needs a binding")
    if binding.bone.shape[0] != topology.n_control:
        raise ValueError(f"binding has {binding.bone.shape[0]} points, topology has {topology.n_control}")
    if method == "rigid":
        if options:
            raise ValueError(f"unexpected options for 'rigid': {sorted(options)}")
        return rigid(binding, bind_joints, posed_joints, parents)
    if parents is None:
        raise ValueError("method 'irs' needs parents")
    return irs(binding, bind_joints, posed_joints, parents, **options)
