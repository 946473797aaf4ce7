"""Forward kinematics: local TRS -> local matrices -> global (world) matrices -> skinning matrices.

Everything is batched numpy. Globals are composed level by level (``rig.levels``: all nodes of one depth at once),
so the only Python loop is over hierarchy depth, never over nodes or joints; the batched variant adds a leading
instance axis so many characters sharing one rig cost the same handful of calls.

Conventions: float32 4x4 matrices, column vectors (p' = M @ p), local = T @ R @ S as glTF defines it
(:func:`engine.math.transform.compose_trs`), and the global of a node is ``global[parent] @ local``. Arrays are
indexed by glTF node index.

Skinning follows the glTF spec (world-space skinning): a skinned vertex ends at
``sum_k w_k (G[joint_k] @ IBM_k) @ v``; the transform of the node that carries the skinned mesh is ignored. The
"joint matrix = inverse(mesh world) @ joint world @ IBM" form of some viewers is the same thing expressed in the
mesh node's space; this engine keeps skinned results in world space.
"""
from __future__ import annotations

from typing import TYPE_CHECKING

import numpy as np

from engine.math.numerics import quiet_underflow
from engine.math.transform import compose_trs

if TYPE_CHECKING:  # pragma: no cover - typing only
    from engine.anim.pose import Pose
    from engine.anim.rig import Rig
    from engine.assets.model import Skin

__all__ = ["local_matrices", "global_matrices", "global_matrices_batched",
           "local_matrices_batched", "skin_matrices", "joint_matrices"]


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


@quiet_underflow
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


@quiet_underflow
def skin_matrices(globals_: np.ndarray, skin: Skin) -> np.ndarray:
    """Skinning matrices ``(..., J, 4, 4)`` float32 = joint world @ inverse bind (identity at bind).

    World-space skinning per glTF: the skinned mesh node's own transform is not part of it.
    Works for one pose ``(N, 4, 4)`` or a batch ``(I, N, 4, 4)``.
    """
    ibm = np.asarray(skin.inverse_bind, np.float32)
    return np.matmul(joint_matrices(globals_, skin), ibm).astype(np.float32, copy=False)
