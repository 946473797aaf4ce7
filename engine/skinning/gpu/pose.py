"""Per-frame pose upload of one batch of the deformer graph: stacked poses in, joint and bone records out.

:class:`PoseStack` holds the pose of every instance of a batch stacked over the batch's joints (instance k:
rows ``joint_base`` ..), filled by ``DeformerGraph.set_pose``. Once per frame :meth:`PoseStack.upload` packs
them for all instances at once (one batched computation per quantity, only what the batch's nodes read: LBS
needs only the skin matrices; DQS the dual quaternions of :func:`engine.skinning.gpu.spring.dual_quats`;
rigid / IRS / springs the bone records) and writes each buffer or image once. Nothing is read back.
"""
from __future__ import annotations

from dataclasses import dataclass

import moderngl
import numpy as np

from engine.gpu.layouts import pack_mat4
from engine.skinning.gpu import layouts as L
from engine.skinning.gpu import spring as gpu_spring
from engine.skinning.gpu.records import Instance
from engine.skinning.springs.frames import pose_motion, root_units, warm_scale, warm_start_allowed
from engine.skinning.types import Bones, bone_endpoints, joint_rotations


@dataclass(frozen=True)
class PoseNeeds:
    """What a batch's nodes read of the pose (the upload computes nothing else)."""

    differential: bool            # some skin node skins from last frame's pose
    dual_quats: bool              # some (unfused) skin node uses DQS
    bones: bool                   # rigid / IRS skinning or springs: bone records
    irs: bool                     # IRS bend quaternions
    joint_ssbo: bool              # (unfused) skin nodes read the DeformJoint SSBO
    fused_methods: tuple[str, ...]  # methods of fused skin_copy nodes (compact joint images)
    warm: bool = False            # a spring stage: per instance, may its springs start warm (DeformBone.p.w)


def upload_dual_quats(mats: np.ndarray, segments: np.ndarray) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """The per-frame DQS split: gpu_spring.dual_quats with Newton polar rotations (no SVD per joint)."""
    return gpu_spring.dual_quats(mats, segments, fast=True)


class PoseStack:
    """Stacked poses of a batch's instances and the records the per-frame upload writes."""

    def __init__(self, needs: PoseNeeds) -> None:
        self.needs = needs
        self.n_joints = 0
        self.n_bones = 0
        self.skin = np.zeros((0, 4, 4))
        self.posed = np.zeros((0, 4, 4))
        self.prev_skin = np.zeros((0, 4, 4))
        self.prev_posed = np.zeros((0, 4, 4))
        self.bind = np.zeros((0, 4, 4))
        self.joint_starts = np.zeros(0, np.int64)
        self.joint_rec = L.DEFORM_JOINT.zeros(1)
        self.skin_joint_rec = {m: L.SKIN_JOINTS[m].zeros(1) for m in needs.fused_methods}
        self.bone_rec = L.DEFORM_BONE.zeros(1)
        self.bones_all: Bones | None = None  # the bones of every instance with joint indices into the stack
        self.bone_rows = np.zeros(0, np.int64)
        self.root_rows = np.zeros(0, np.int64)
        self.bone_refs = (np.zeros(0, np.int64), np.zeros(0, np.int64))
        # warm start (springs.warm_start_allowed per instance): last frame's poses (None: no last frame since the
        # layout, every instance starts cold), stacked parents, per-instance scales and the instance of each bone
        self.instances: list[Instance] = []
        self.warm_prev: np.ndarray | None = None
        self.parents_all = np.zeros(0, np.int64)
        self.warm_scales = np.zeros(0)
        self.bone_instance = np.zeros(0, np.int64)
        self.warm_flags = np.zeros(0, bool)

    def set(self, inst: Instance, skin_mats: np.ndarray, posed_joints: np.ndarray) -> None:
        """The next frame's pose of one instance (shapes checked by the caller)."""
        sl = inst.joints
        self.skin[sl] = skin_mats
        self.posed[sl] = posed_joints

    def layout(self, instances: list[Instance], old_joints: dict[int, slice], n_joints: int, n_bones: int) -> None:
        """Stacked pose arrays and bone index tables for a new layout (poses of staying instances kept:
        ``old_joints`` maps id(instance) to its rows before the re-layout)."""
        nj = n_joints
        self.n_joints, self.n_bones = n_joints, n_bones
        old_pose = (self.skin, self.posed, self.prev_skin, self.prev_posed)
        eye = np.broadcast_to(np.eye(4), (nj, 4, 4))
        skin, posed, prev_skin, prev_posed = (np.array(eye), np.zeros((nj, 4, 4)), np.array(eye),
                                              np.zeros((nj, 4, 4)))
        bind = np.zeros((nj, 4, 4))
        for inst in instances:
            sl = inst.joints
            bind[sl] = inst.asset.bind_joints
            ob = old_joints.get(id(inst))
            if ob is not None:
                for dst, src in zip((skin, posed, prev_skin, prev_posed), old_pose):
                    dst[sl] = src[ob]
            else:
                posed[sl] = prev_posed[sl] = inst.asset.bind_joints
        self.skin, self.posed, self.prev_skin, self.prev_posed = skin, posed, prev_skin, prev_posed
        self.bind = bind
        self.joint_starts = np.array([i.joint_base for i in instances], np.int64)
        self.joint_rec = L.DEFORM_JOINT.zeros(max(nj, 1))
        self.joint_rec["stretch"] = pack_mat4(np.eye(4))
        # joint records padded to whole image rows: written to the image as they are every frame
        rows = -(-max(nj, 1) // L.IMAGE_ROW_ITEMS)
        self.skin_joint_rec = {m: L.SKIN_JOINTS[m].zeros(rows * L.IMAGE_ROW_ITEMS) for m in self.needs.fused_methods}
        self.bone_rec = L.DEFORM_BONE.zeros(max(n_bones, 1))
        self.instances = instances
        self.warm_prev = None  # the pools are new: no last output to carry
        self.warm_flags = np.zeros(len(instances), bool)
        if self.needs.warm:
            self.parents_all = np.concatenate(
                [np.where(i.asset.parents >= 0, i.asset.parents.astype(np.int64) + i.joint_base, -1)
                 for i in instances]) if instances else np.zeros(0, np.int64)
            self.warm_scales = np.array([warm_scale(i.asset.arrays["vstatic"][:, 3]) for i in instances])
        # bones of every instance with a binding, joint indices shifted into the stacked pose arrays
        boned = [i for i in instances if i.asset.binding is not None and i.asset.n_bones]
        if not (boned and self.needs.bones):
            self.bones_all = None
            return
        parent, child, tip, rows_, s_ref, e_ref, owner = [], [], [], [], [], [], []
        for k, inst in enumerate(instances):
            if inst.asset.binding is not None and inst.asset.n_bones:
                owner.append(np.full(inst.asset.n_bones, k, np.int64))
        self.bone_instance = np.concatenate(owner)
        # each instance's skeleton root (its first joint without a parent): the springs' pose unit
        # (springs.pose_unit), carried in the bone records' c.w
        self.root_rows = np.array([i.joint_base + (int(np.flatnonzero(i.asset.parents < 0)[0])
                                                   if np.any(i.asset.parents < 0) else 0) for i in instances],
                                  np.int64)
        for inst in boned:
            bb = inst.asset.binding.bones  # type: ignore[union-attr]
            jb = inst.joint_base
            parent.append(bb.parent_joint.astype(np.int64) + jb)
            child.append(np.where(bb.child_joint >= 0, bb.child_joint.astype(np.int64) + jb, -1))
            tip.append(np.asarray(bb.tip_local, np.float32))
            rows_.append(np.arange(bb.count) + inst.bone_base)
            sr, er = inst.asset.bend_refs  # type: ignore[misc]
            s_ref.append(np.where(sr >= 0, sr + jb, -1))
            e_ref.append(np.where(er >= 0, er + jb, -1))
        self.bones_all = Bones(np.concatenate(parent), np.concatenate(child), np.concatenate(tip))
        self.bone_rows = np.concatenate(rows_)
        self.bone_refs = (np.concatenate(s_ref), np.concatenate(e_ref))

    def upload(self, joints: moderngl.Buffer, bones: moderngl.Buffer,
               skin_joint_images: dict[str, moderngl.Texture]) -> None:
        """Pack the joint (and bone) data of every instance for this frame, batched over all instances, and
        write the DeformJoint SSBO, the fused stages' joint images (per method) and the DeformBone SSBO."""
        if self.n_joints == 0:
            return
        need = self.needs
        rec = self.joint_rec
        nj = self.n_joints
        if need.differential:
            mats = self.skin @ np.linalg.inv(self.prev_skin)
            src_joints = self.prev_posed
        else:
            mats = self.skin
            src_joints = self.bind
        dq = None
        if need.joint_ssbo:
            rec["skin"][:nj] = pack_mat4(mats)
            if need.dual_quats:
                dq = upload_dual_quats(mats, self.joint_starts)
                rec["qr"][:nj] = dq[0]
                rec["qd"][:nj] = dq[1]
                rec["stretch"][:nj] = pack_mat4(dq[2])
            joints.write(rec.tobytes())
        for m in need.fused_methods:  # fused stages skin in bind mode: the skin matrices themselves
            srec = self.skin_joint_rec[m]
            if m == "lbs":
                srec["rows"][:nj] = self.skin[:, :3, :]
            else:
                if dq is None or need.differential:
                    dq = upload_dual_quats(self.skin, self.joint_starts)
                qr, qd, st = dq
                srec["qr"][:nj] = qr
                srec["qd"][:nj] = qd
                srec["stretch"][:nj, 0] = st[:, [0, 0, 0, 1], [0, 1, 2, 1]]
                srec["stretch"][:nj, 1, :2] = st[:, [1, 2], [2, 2]]
            skin_joint_images[m].write(srec.tobytes())
        if self.bones_all is not None:
            if need.warm:
                self._warm_flags()
            self._upload_bones(bones, src_joints)

    def _warm_flags(self) -> None:
        """Per instance: may its springs start from last frame's output (springs.warm_start_allowed on the motion
        of its joints since the last upload, batched over every joint)? Remembers this frame's poses while some
        instance wants the warm start (the spring stage keeps last frame's bone records only then: one that turns
        it on starts cold once)."""
        flags = np.zeros(len(self.instances), bool)
        params = [i.params for i in self.instances]
        wanted = np.array([p.warm_start and p.mode == "independent" for p in params], bool)
        if not wanted.any():
            self.warm_flags, self.warm_prev = flags, None
            return
        if self.warm_prev is not None:
            angle, offset = pose_motion(self.bind, self.parents_all, self.warm_prev, self.posed)
            a = np.maximum.reduceat(angle, self.joint_starts)
            o = np.maximum.reduceat(offset, self.joint_starts)
            if self.root_rows.shape[0] == o.shape[0]:  # offsets in bind units, as the reference's solve
                o = o / root_units(self.bind, self.posed, self.root_rows)
            for k in np.nonzero(wanted)[0]:
                flags[k] = warm_start_allowed(params[k], a[k:k + 1], o[k:k + 1], self.warm_scales[k])
        self.warm_flags = flags
        self.warm_prev = np.array(self.posed)

    def _upload_bones(self, bones: moderngl.Buffer, src_joints: np.ndarray) -> None:
        bb = self.bones_all
        assert bb is not None
        rec = self.bone_rec
        rows = self.bone_rows
        # endpoints in float32 as the references compute them
        p, c = bone_endpoints(bb, self.posed.astype(np.float32))
        ps, cs = bone_endpoints(bb, src_joints.astype(np.float32))
        r_now_j = joint_rotations(self.bind, self.posed)
        r_src_j = joint_rotations(self.bind, src_joints)
        r_now = r_now_j[bb.parent_joint]
        rot = np.zeros((rows.shape[0], 4, 4))
        rot[:, :3, :3] = r_now @ np.swapaxes(r_src_j[bb.parent_joint], 1, 2)
        rot[:, 3, 3] = 1.0
        rn = np.zeros((rows.shape[0], 4, 4))
        rn[:, :3, :3] = r_now
        rn[:, 3, 3] = 1.0
        rec["p"][rows, :3] = p
        if self.needs.warm:
            rec["p"][rows, 3] = self.warm_flags[self.bone_instance]
        rec["c"][rows, :3] = c
        # the pose's scene units per bind unit (springs.pose_unit): spring_frame.comp solves in bind units
        units = root_units(self.bind, self.posed, self.root_rows)
        rec["c"][rows, 3] = units[self.bone_instance]
        rec["p_src"][rows, :3] = ps
        rec["c_src"][rows, :3] = cs
        rec["rot"][rows] = pack_mat4(rot)
        rec["rot_now"][rows] = pack_mat4(rn)
        if self.needs.irs:
            q_start, q_end = gpu_spring.bend_quats(r_now_j, bb.parent_joint, *self.bone_refs)
            rec["q_start"][rows] = q_start
            rec["q_end"][rows] = q_end
        bones.write(rec.tobytes())

    def end_frame(self) -> None:
        """Remember this frame's pose (differential skinning reads it next frame)."""
        if self.needs.differential:
            np.copyto(self.prev_skin, self.skin)
            np.copyto(self.prev_posed, self.posed)
