"""Per-frame attachment frames of the spring deformer, and carrying a result from one frame to the next.

`pose_frame` gives every vertex its posed attachment, the rotation of its frame and its bone reference
direction, turned near interior joints by the joint blend (`blend_rotations`, `rotation_share`; the bind-time
weights are in rest.py). The warm start and the frame-dependent mode move the last output with the frames
(`carry`) when the pose moved little (`pose_motion`, `warm_scale`, `warm_start_allowed`). See docs/springs.md.
"""
from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from engine.math.quat import from_matrix as quat_from_matrix
from engine.skinning.springs.params import SpringParams
from engine.skinning.springs.rest import SpringRest
from engine.skinning.springs.vec import _SIN_EPS, _norm, _unit
from engine.skinning.types import Binding, bone_endpoints, joint_rotations

__all__ = ["PoseFrame", "pose_unit", "root_units", "to_pose_unit", "rotation_share", "blend_rotations",
           "pose_frame", "pose_motion", "warm_scale", "warm_start_allowed", "carry"]


@dataclass
class PoseFrame:
    """Per-vertex pose data for one frame: posed attachments (V,3), the rotation of each vertex's frame relative
    to bind (V,3,3; its bone's, turned by the joint blend), and the bone reference direction the bone springs
    pull towards (V,3, unit). bone_attach / bone_rot: the plain attachment on the bone and the bone's rotation
    (what the frame-dependent start carries the last output with); None when equal to attach / rot."""

    attach: np.ndarray
    rot: np.ndarray
    bone_ref: np.ndarray
    bone_attach: np.ndarray | None = None
    bone_rot: np.ndarray | None = None
    held_target: np.ndarray | None = None  # (V,3): the rigid points' positions (rest.rigid_points), else unused
    diff: np.ndarray | None = None  # (V,3): rot @ rest.diff0, the differential term's target offsets

    @property
    def plain_attach(self) -> np.ndarray:
        return self.attach if self.bone_attach is None else self.bone_attach

    @property
    def plain_rot(self) -> np.ndarray:
        return self.rot if self.bone_rot is None else self.bone_rot


def pose_unit(bind_joints: np.ndarray, parents: np.ndarray, posed_joints: np.ndarray) -> float:
    """The scene units per bind (mesh) unit of a pose: the uniform scale of the skeleton root's skin matrix
    posed @ inv(bind) (`root_units`; the root: the first joint without a parent).

    It is 1 when the mesh is given in the units its joints are posed in, whatever scale sits on the armature
    (the scale is then in the bind matrices too and cancels). A mesh exported in the armature's own units under
    a scaled armature (Blender: a mesh parented to an armature scaled 100x, joint offsets in centimetres) has its
    bind lengths in those units while the pose is in the scene's: the springs then solve in bind units (the
    pose divided by this, `to_pose_unit`) and their result is scaled back, so nothing they compute depends on
    where the scale sits (issue 26, item 1)."""
    par = np.asarray(parents).reshape(-1)
    roots = np.flatnonzero(par < 0)
    row = np.array([roots[0] if roots.size else 0], np.int64)
    if np.asarray(bind_joints).shape[0] == 0:
        return 1.0
    return float(root_units(bind_joints, posed_joints, row)[0])


def root_units(bind_joints: np.ndarray, posed_joints: np.ndarray, rows: np.ndarray) -> np.ndarray:
    """(R,) cube root of |det| of the 3x3 blocks of posed @ inv(bind) for the joint rows `rows` (1 where it is
    not finite and positive): `pose_unit` batched over stacked skeletons (the GPU pose upload)."""
    bj = np.asarray(bind_joints, np.float64)[rows, :3, :3]
    pj = np.asarray(posed_joints, np.float64)[rows, :3, :3]
    with np.errstate(all="ignore"):
        u = np.cbrt(np.abs(np.linalg.det(pj) / np.linalg.det(bj)))
    return np.where(np.isfinite(u) & (u > 0.0), u, 1.0)


def to_pose_unit(posed_joints: np.ndarray, unit: float) -> np.ndarray:
    """Joint world matrices (J,4,4) scaled by 1 / unit about the origin (the pose in bind units, `pose_unit`)."""
    out = np.array(posed_joints, np.float64)
    if unit != 1.0:
        out[:, :3, :] /= unit
    return out


def rotation_share(rel: np.ndarray, f: np.ndarray) -> np.ndarray:
    """(V,3,3) rotations by the share f (V,) (any sign) of the rotations rel (V,3,3): rel's unit quaternion
    (w >= 0, Shepperd's method, exact near a half turn) as axis and angle, the angle times f, by Rodrigues'
    formula (identity where f = 0 or rel is the identity)."""
    q = quat_from_matrix(np.asarray(rel, np.float64))  # xyzw, w >= 0
    sin_half = _norm(q[:, :3])
    ok = sin_half > _SIN_EPS
    axis = q[:, :3] * (ok / np.where(ok, sin_half, 1.0))[:, None]
    ang = 2.0 * np.arctan2(sin_half, q[:, 3]) * np.asarray(f, np.float64)
    k = np.zeros(q.shape[:1] + (3, 3))
    k[:, 0, 1], k[:, 0, 2], k[:, 1, 2] = -axis[:, 2], axis[:, 1], -axis[:, 0]
    k[:, 1, 0], k[:, 2, 0], k[:, 2, 1] = axis[:, 2], -axis[:, 1], axis[:, 0]
    kk = np.einsum("vij,vjk->vik", k, k)
    return np.eye(3)[None] + np.sin(ang)[:, None, None] * k + (1.0 - np.cos(ang))[:, None, None] * kk


def blend_rotations(own: np.ndarray, other: np.ndarray, w: np.ndarray, own_first: np.ndarray) -> np.ndarray:
    """(V,3,3) rotations turning by the share 1 - w of the rotation from `own` to `other` (both (V,3,3)).

    Both sides of a joint turn about one axis: the relative rotation is always taken from the lower-numbered
    bone of the pair to the higher one (own_first (V,) bool: the vertex's own bone is the lower one), and the
    higher bone's vertices turn by the negative share. Away from a half turn this equals the share of
    other own^T; at a half turn (a 180 deg twist, where the shortest arc has no preferred sense) it keeps the
    two sides of the joint turning the same way instead of 180 deg apart."""
    first = np.asarray(own_first, bool)
    fwd = np.einsum("vij,vkj->vik", other, own)  # other own^T
    rel = np.where(first[:, None, None], fwd, np.transpose(fwd, (0, 2, 1)))
    share = 1.0 - np.asarray(w, np.float64)
    return rotation_share(rel, np.where(first, share, -share))


def pose_frame(binding: Binding, bind_joints: np.ndarray, posed_joints: np.ndarray, rest: SpringRest,
               bone_mode: str = "frame", joint_blend: bool = False) -> PoseFrame:
    """Posed attachments a_i = p + t_i (c - p), per-vertex bone rotations and bone reference directions; with
    joint_blend, attachments, rotations and references near interior joints turned about the joint J by
    `blend_rotations` (a_i = J + B (a_i - J), rot = B R, ref = B ref)."""
    posed = np.asarray(posed_joints, np.float64)
    p, c = bone_endpoints(binding.bones, posed)
    p = p.astype(np.float64)
    c = c.astype(np.float64)
    b = binding.bone
    t = np.asarray(binding.t, np.float64)[:, None]
    attach = p[b] + t * (c[b] - p[b])
    rot = joint_rotations(bind_joints, posed)[binding.bones.parent_joint][b]
    if bone_mode == "frame":
        ref = np.einsum("vij,vj->vi", rot, rest.s_dir)
    else:
        bdir, _, _ = _unit(c - p, rest.tiny)
        ref = bdir[b]
    jrot = joint_rotations(bind_joints, posed)[binding.bones.parent_joint]
    held = None
    if rest.held is not None:  # the rigid points: their joint's rigid motion, P'_j + R_j (v - P_j)
        hb = np.maximum(rest.rigid_bone, 0)
        held = p[hb] + np.einsum("vij,vj->vi", jrot[hb], rest.rigid_offset)
    if not joint_blend or rest.blend_w.shape[0] != b.shape[0] or not np.any(rest.blend_other >= 0):
        return PoseFrame(attach=attach, rot=rot, bone_ref=ref, held_target=held, diff=_diff(rot, rest))
    has = rest.blend_other >= 0
    other = np.where(has, rest.blend_other, b)
    turn = blend_rotations(rot, jrot[other], np.where(has, rest.blend_w, 1.0), b < other)
    joint = np.where((rest.blend_end == 0)[:, None], p[b], c[b])
    frot = np.einsum("vij,vjk->vik", turn, rot)
    return PoseFrame(attach=joint + np.einsum("vij,vj->vi", turn, attach - joint),
                     rot=frot, bone_ref=np.einsum("vij,vj->vi", turn, ref),
                     bone_attach=attach, bone_rot=rot, held_target=held, diff=_diff(frot, rest))


def _diff(rot: np.ndarray, rest: SpringRest) -> np.ndarray | None:
    """The differential term's target offsets rot_i delta0_i (V,3); None without them in the rest state."""
    if rest.diff0.shape != (rot.shape[0], 3):
        return None
    return np.einsum("vij,vj->vi", rot, rest.diff0)


def pose_motion(bind_joints: np.ndarray, parents: np.ndarray, prev_joints: np.ndarray, posed_joints: np.ndarray
                ) -> tuple[np.ndarray, np.ndarray]:
    """How much of a pose change the carrying of the last output does not follow, per joint (J,): the angle
    (radians) by which the joint's rotation relative to its parent changed from prev_joints to posed_joints, and
    the distance its offset from the parent, in the parent's (polar) frame, moved (scene units). Roots (parent -1)
    give 0: a rigid motion of a whole skeleton carries every bone's points exactly. Works on stacked skeletons
    (parents indexing the stack)."""
    par = np.asarray(parents, np.int64).reshape(-1)
    posed = np.asarray(posed_joints, np.float64)
    prev = np.asarray(prev_joints, np.float64)
    rn, rp = joint_rotations(bind_joints, posed), joint_rotations(bind_joints, prev)
    has = par >= 0
    pj = np.where(has, par, np.arange(par.shape[0]))
    rel_n = np.einsum("vji,vjk->vik", rn[pj], rn)  # R_parent^T R
    rel_p = np.einsum("vji,vjk->vik", rp[pj], rp)
    cos = 0.5 * (np.einsum("vij,vij->v", rel_n, rel_p) - 1.0)  # trace(rel_n rel_p^T) = 1 + 2 cos
    angle = np.arccos(np.clip(cos, -1.0, 1.0))
    off_n = np.einsum("vji,vj->vi", rn[pj], posed[:, :3, 3] - posed[pj, :3, 3])
    off_p = np.einsum("vji,vj->vi", rp[pj], prev[:, :3, 3] - prev[pj, :3, 3])
    return np.where(has, angle, 0.0), np.where(has, _norm(off_n - off_p), 0.0)


def warm_scale(r: np.ndarray) -> float:
    """Length that turns SpringParams.warm_limit (radians) into the joint-offset bound of the warm start: the
    median bind |s| of the points off their bone (1 when none)."""
    r = np.asarray(r, np.float64)
    r = r[r > 0.0]
    return float(np.median(r)) if r.size else 1.0


def warm_start_allowed(params: SpringParams, angle: np.ndarray, offset: np.ndarray, scale: float) -> bool:
    """Whether a frame-independent solve may start from the carried last output (`pose_motion`'s angle and
    offset of the joints since that output, `warm_scale` of the mesh): the pose moved by at most warm_limit."""
    if not params.warm_start or params.mode != "independent":
        return False
    a = float(np.max(angle)) if np.size(angle) else 0.0
    o = float(np.max(offset)) if np.size(offset) else 0.0
    return a <= params.warm_limit and o <= params.warm_limit * scale


def carry(positions: np.ndarray, prev: PoseFrame, now: PoseFrame, *, plain: bool = False) -> np.ndarray:
    """Points of the frame `prev` moved by the motion of each vertex's frame since then: a' + F' F^T (x - a) with
    the joint-blended attachments and rotations (the warm start: a result at the blended rigid start carries to
    the blended rigid start of `now`, only its deviation from it is carried along); plain: on the bones (the
    dependent mode, as the GPU's differential skinning does)."""
    a_p, r_p = (prev.plain_attach, prev.plain_rot) if plain else (prev.attach, prev.rot)
    a_n, r_n = (now.plain_attach, now.plain_rot) if plain else (now.attach, now.rot)
    delta = np.einsum("vij,vkj->vik", r_n, r_p)  # F_now F_prev^T
    return a_n + np.einsum("vij,vj->vi", delta, np.asarray(positions, np.float64) - a_p)
