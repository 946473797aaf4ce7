"""Data contract of the deformation core (numpy reference and GPU deformer graph share it).

Everything here is plain numpy data; shapes are given as (rows, cols). Index arrays are int32, real
arrays float32 unless noted. "Skin space" is glTF world space of the skinned mesh as the spec defines it:
a skinned vertex ends at sum_k w_k (G_joint_k @ IBM_k) @ v, so the bind pose of joint j is inv(IBM_j)
and joint positions at bind are inv(IBM)[:, :3, 3].

Pose inputs every deformer takes:
  bind_joints  (J,4,4)  joint world matrices at bind = inv(inverse_bind)
  posed_joints (J,4,4)  joint world matrices of the current pose (from engine.anim FK)
  skin_mats    (J,4,4)  posed_joints @ inverse_bind (identity at bind)
  parents      (J,)     parent joint of each joint within the skin, -1 for roots

`bone_endpoints` and `joint_rotations` read these: where the bones are, and how each joint turned since bind.
"""
from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np


@dataclass
class MeshTopology:
    """Display vertices welded by position into control points, with CSR adjacency.

    control_of_display (D,)   control index of every display (glTF) vertex
    display_of_control (V,)   one representative display vertex per control point
    positions          (V,3)  control point positions at bind
    triangles          (T,3)  triangles over control indices (degenerate ones kept, flagged)
    display_triangles  (T,3)  the same triangles over display indices
    adj_offset, adj_count (V,) and adj_index (sum count,): one-ring neighbours in CSR form
    edges              (E,2)  unique edges, i < j, sorted
    face_offset, face_count (V,) and face_index (...): incident triangles per control point (CSR)
    report             counts: degenerate_triangles, isolated_vertices, nonmanifold_edges, boundary_edges
    """

    control_of_display: np.ndarray
    display_of_control: np.ndarray
    positions: np.ndarray
    triangles: np.ndarray
    display_triangles: np.ndarray
    adj_offset: np.ndarray
    adj_count: np.ndarray
    adj_index: np.ndarray
    edges: np.ndarray
    face_offset: np.ndarray
    face_count: np.ndarray
    face_index: np.ndarray
    report: dict = field(default_factory=dict)

    @property
    def n_control(self) -> int:
        return int(self.positions.shape[0])

    @property
    def n_display(self) -> int:
        return int(self.control_of_display.shape[0])


@dataclass
class Bones:
    """Bones the control points attach to (research ch. 3). Bone b runs from joint parent_joint[b]
    to joint child_joint[b]; a leaf bone has child_joint = -1 and ends at a tip given in the parent
    joint's bind frame by tip_local[b] (xyz, so the tip follows the joint rigidly)."""

    parent_joint: np.ndarray  # (B,) int32
    child_joint: np.ndarray  # (B,) int32, -1 for a tip bone
    tip_local: np.ndarray  # (B,3) float32, used where child_joint == -1

    @property
    def count(self) -> int:
        return int(self.parent_joint.shape[0])


@dataclass
class Binding:
    """Attachment binding of every control point: a = p + t (c - p) on bone `bone`, s = v - a.

    bone   (V,)  bone index per control point
    t      (V,)  position along the bone in [0, 1]
    attach (V,3) attachment point a at bind
    scale  (V,3) scale vector s = v - a at bind
    quality      gap statistics between neighbouring attachments and other diagnostics
    """

    bones: Bones
    bone: np.ndarray
    t: np.ndarray
    attach: np.ndarray
    scale: np.ndarray
    quality: dict = field(default_factory=dict)


def bone_endpoints(bones: Bones, joints: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """World endpoints (P, C) of every bone, each (B,3), for joint world matrices `joints` (J,4,4)."""
    p = joints[bones.parent_joint, :3, 3]
    tip = np.einsum("bij,bj->bi", joints[bones.parent_joint, :3, :3], bones.tip_local) + p
    has_child = bones.child_joint >= 0
    c = np.where(has_child[:, None], joints[np.maximum(bones.child_joint, 0), :3, 3], tip)
    return p.astype(np.float32), c.astype(np.float32)


def joint_rotations(bind_joints: np.ndarray, posed_joints: np.ndarray) -> np.ndarray:
    """Rotation of every joint relative to bind, (J,3,3) float64: the polar (closest rotation) factor of the
    3x3 block of posed @ inv(bind), so joint scale does not leak into the scale vectors. The one copy: the
    springs, radial, edits, ARAP and the GPU pose upload use it."""
    bj = np.asarray(bind_joints, np.float64)
    pj = np.asarray(posed_joints, np.float64)
    if bj.shape != pj.shape or bj.ndim != 3 or bj.shape[1:] != (4, 4):
        raise ValueError(f"bind_joints and posed_joints must both be (J,4,4), got {bj.shape} and {pj.shape}")
    with np.errstate(under="ignore"):  # tiny singular values of a degenerate joint are not an error
        m = pj @ np.linalg.inv(bj)
        u, _, vt = np.linalg.svd(m[:, :3, :3])
        d = np.sign(np.linalg.det(u @ vt))
        u[:, :, 2] *= d[:, None]
        return u @ vt
