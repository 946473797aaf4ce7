"""Forward kinematics: local TRS -> local matrices -> global (world) matrices -> skinning matrices.

Everything is batched numpy. Globals are composed level by level (``rig.levels``: all nodes of one depth at once),
so the only Python loop is over hierarchy depth, never over nodes or joints; the batched variant adds a leading
instance axis so many characters sharing one rig cost the same handful of calls.

Conventions: float32 4x4 matrices, column vectors (p' = M @ p), local = T @ R @ S as glTF defines it, and the
global of a node is ``global[parent] @ local``. Arrays are indexed by glTF node index.

Skinning follows the glTF spec (world-space skinning): a skinned vertex ends at
``sum_k w_k (G[joint_k] @ IBM_k) @ v``; the transform of the node that carries the skinned mesh is ignored. The
"joint matrix = inverse(mesh world) @ joint world @ IBM" form of some viewers is the same thing expressed in the
mesh node's space; this engine keeps skinned results in world space.
"""
from __future__ import annotations

from typing import TYPE_CHECKING

import numpy as np

from engine.anim import quat

if TYPE_CHECKING:  # pragma: no cover - typing only
    from engine.anim.pose import Pose
    from engine.anim.rig import Rig
    from engine.assets.model import Skin

__all__ = ["compose_trs", "decompose", "local_matrices", "global_matrices", "global_matrices_batched",
           "local_matrices_batched", "skin_matrices", "joint_matrices"]


@quat.quiet_underflow
def compose_trs(translation: np.ndarray, rotation: np.ndarray, scale: np.ndarray,
                out: np.ndarray | None = None) -> np.ndarray:
    """T @ R @ S as ``(..., 4, 4)`` float32 from ``(..., 3)``, ``(..., 4)`` xyzw, ``(..., 3)``.

    Rotations are used as given (assumed unit; the sampler and the blender normalise theirs).
    """
    t = np.asarray(translation, np.float32)
    r = np.asarray(rotation, np.float32)
    s = np.asarray(scale, np.float32)
    lead = np.broadcast_shapes(t.shape[:-1], r.shape[:-1], s.shape[:-1])
    if out is None:
        out = np.empty((*lead, 4, 4), np.float32)
    # R @ diag(S) written entry by entry straight into `out`: the rotation-matrix formula of quat.to_matrix with
    # column j scaled by s_j. ~4x faster than building R and multiplying into the strided (..., :3, :3) view.
    x, y, z, w = r[..., 0], r[..., 1], r[..., 2], r[..., 3]
    x2, y2, z2 = x + x, y + y, z + z
    xx, yy, zz = x * x2, y * y2, z * z2
    xy, xz, yz = x * y2, x * z2, y * z2
    wx, wy, wz = w * x2, w * y2, w * z2
    sx, sy, sz = s[..., 0], s[..., 1], s[..., 2]
    np.multiply(1 - (yy + zz), sx, out=out[..., 0, 0])
    np.multiply(xy - wz, sy, out=out[..., 0, 1])
    np.multiply(xz + wy, sz, out=out[..., 0, 2])
    np.multiply(xy + wz, sx, out=out[..., 1, 0])
    np.multiply(1 - (xx + zz), sy, out=out[..., 1, 1])
    np.multiply(yz - wx, sz, out=out[..., 1, 2])
    np.multiply(xz - wy, sx, out=out[..., 2, 0])
    np.multiply(yz + wx, sy, out=out[..., 2, 1])
    np.multiply(1 - (xx + yy), sz, out=out[..., 2, 2])
    out[..., :3, 3] = t
    out[..., 3, :3] = 0
    out[..., 3, 3] = 1
    return out


@quat.quiet_underflow
def decompose(matrix: np.ndarray) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Split affine ``(..., 4, 4)`` matrices into translation, unit rotation (xyzw) and scale.

    Exact for T @ R @ S with positive or mirrored scale (a negative determinant puts the sign on x scale).
    Shear cannot be represented and is dropped; a zero-scale axis gives the identity rotation. Used to give
    matrix-defined nodes a rest TRS for blending and tools; FK keeps using their exact matrix.
    """
    m = np.asarray(matrix, np.float64)
    if m.shape[-2:] != (4, 4):
        raise ValueError(f"decompose expects (...,4,4) matrices, got shape {m.shape}")
    t = m[..., :3, 3].copy()
    a = m[..., :3, :3]
    s = np.sqrt(np.sum(a * a, axis=-2))  # column norms, (..., 3)
    s = np.where(np.linalg.det(a)[..., None] < 0, s * np.array([-1.0, 1.0, 1.0]), s)
    degenerate = np.any(np.abs(s) <= 1e-12, axis=-1)
    rot = a / np.where(np.abs(s) <= 1e-12, 1.0, s)[..., None, :]
    r = quat.from_matrix(rot)
    r = np.where(degenerate[..., None], quat.identity((), np.float64), r)
    return t.astype(np.float32), r.astype(np.float32), s.astype(np.float32)


def local_matrices_batched(rig: Rig, translation: np.ndarray, rotation: np.ndarray, scale: np.ndarray,
                           out: np.ndarray | None = None) -> np.ndarray:
    """Local matrices ``(I, N, 4, 4)`` of ``I`` poses; nodes given by a matrix use their static matrix."""
    loc = compose_trs(translation, rotation, scale, out=out)
    if rig.matrix_nodes.size:
        loc[..., rig.matrix_nodes, :, :] = rig.static_matrix[rig.matrix_nodes]
    return loc


def local_matrices(rig: Rig, pose: Pose) -> np.ndarray:
    """Local matrices ``(N, 4, 4)`` float32 of one pose."""
    return local_matrices_batched(rig, pose.translation, pose.rotation, pose.scale)


def _check_pose_arrays(rig: Rig, t: np.ndarray, r: np.ndarray, s: np.ndarray) -> None:
    n = rig.count
    if t.shape[-2:] != (n, 3) or r.shape[-2:] != (n, 4) or s.shape[-2:] != (n, 3):
        raise ValueError(f"pose arrays must be (...,{n},3), (...,{n},4), (...,{n},3) for this rig; got "
                         f"{t.shape}, {r.shape}, {s.shape}")


@quat.quiet_underflow
def global_matrices_batched(rig: Rig, poses_T: np.ndarray, poses_R: np.ndarray, poses_S: np.ndarray,
                            out: np.ndarray | None = None) -> np.ndarray:
    """World matrices ``(I, N, 4, 4)`` float32 of ``I`` poses of one rig (``(I, N, 3|4|3)`` inputs).

    One batched TRS->matrix conversion, then one gather + matmul + scatter per depth level.
    ``out`` may be given to reuse a buffer (it must not alias the inputs).
    """
    t, r, s = np.asarray(poses_T), np.asarray(poses_R), np.asarray(poses_S)
    _check_pose_arrays(rig, t, r, s)
    if rig.fk_identity:  # nodes already sorted by depth: work in place in `out`
        g = compose_trs(t, r, s, out=out)
    else:  # work in depth order, where every level is a contiguous slice
        o = rig.fk_order
        g = compose_trs(t[..., o, :], r[..., o, :], s[..., o, :])
    if rig.fk_matrix_pos.size:
        g[..., rig.fk_matrix_pos, :, :] = rig.fk_matrices
    # Level 0 (roots) keeps its local matrix; each deeper level is parent global @ local.
    for sl, par in zip(rig.fk_slices[1:], rig.fk_parent_pos[1:]):
        lv = g[..., sl, :, :]
        np.matmul(g[..., par, :, :], lv, out=lv)
    if rig.fk_identity:
        return g
    if out is None:
        return g[..., rig.fk_inverse, :, :]
    np.take(g, rig.fk_inverse, axis=-3, out=out)
    return out


def global_matrices(rig: Rig, pose: Pose, out: np.ndarray | None = None) -> np.ndarray:
    """World matrices ``(N, 4, 4)`` float32 of one pose, indexed by glTF node index."""
    return global_matrices_batched(rig, pose.translation, pose.rotation, pose.scale, out=out)


def joint_matrices(globals_: np.ndarray, skin: Skin) -> np.ndarray:
    """World matrices of the skin's joints, ``(..., J, 4, 4)`` = ``globals_[..., skin.joints, :, :]``."""
    return np.asarray(globals_)[..., np.asarray(skin.joints, np.intp), :, :]


@quat.quiet_underflow
def skin_matrices(globals_: np.ndarray, skin: Skin) -> np.ndarray:
    """Skinning matrices ``(..., J, 4, 4)`` float32 = joint world @ inverse bind (identity at bind).

    World-space skinning per glTF: the skinned mesh node's own transform is not part of it.
    Works for one pose ``(N, 4, 4)`` or a batch ``(I, N, 4, 4)``.
    """
    ibm = np.asarray(skin.inverse_bind, np.float32)
    return np.matmul(joint_matrices(globals_, skin), ibm).astype(np.float32, copy=False)
