"""Skin stage (control domain): LBS, DQS, rigid or IRS skinning of every control point of a batch, one dispatch.

Reads the source positions (the bind pose from the static pool or a control resource), the batch's
DeformJoint / DeformBone records (written per frame by the pose upload) and the static SSBOs of its method;
writes the target control resource and, with ``normals = "skinned"``, a 3x3 normal transform per control point
that the copy stage applies to the bind normals. Reference: engine.skinning.skinning.

Units (rigid and IRS in bind mode): the bind-unit scale vector s is scaled by the pose unit u (the bone
records' c.w, ``springs.pose_unit``; 1 unless the mesh is given in other units than its joints are posed in), so
a' + u R s is in the scene's units as the reference's (a spring node's rigid start does not read it:
spring_frame.comp computes a / u + B R s from the bone records).
"""
from __future__ import annotations

from dataclasses import dataclass

import moderngl

from engine.skinning.gpu import layouts as L
from engine.skinning.gpu.stages.base import PooledSourceContext, bind_all, bind_ssbo, set_uniform


@dataclass(frozen=True)
class SkinContext(PooledSourceContext):
    """What one skin dispatch needs (over the control pool)."""

    target: moderngl.Buffer
    joints: moderngl.Buffer               # DeformJoint records
    bones: moderngl.Buffer                # DeformBone records
    static: tuple[tuple[moderngl.Buffer, str], ...]  # static SSBOs of the method with their binding points
    normal_mats: moderngl.Buffer | None   # normal transforms of the target (skinned normals)
    n_groups: int
    influence_sets: int = 1               # vec4 sets of joint ids / weights per control point (4 slots each)


def run(c: SkinContext) -> None:
    """One dispatch over the control pool."""
    o = c.node.options
    cs = c.program("skin", {
        "METHOD": L.METHOD_IDS[o.get("method", "lbs")],
        "SKIN_DIFFERENTIAL": int(o.get("mode", "bind") == "differential"),
        "IRS_BLEND_MATRIX": int(o.get("blend", "nlerp") == "matrix"),
        "IRS_LENGTH_CORRECTION": int(bool(o.get("length_correction", False))),
        "SKIN_NORMALS": int(c.normal_mats is not None),
        "INFLUENCE_SETS": int(c.influence_sets),
    })
    bind_all(((c.instances, "B_INSTANCES"), (c.groups, "B_GROUPS"), (c.source, "B_SRC"), (c.target, "B_DST"),
              (c.joints, "B_JOINTS"), (c.bones, "B_BONES")) + c.static)
    if c.normal_mats is not None:
        bind_ssbo(c.normal_mats, "B_NMAT")
    set_uniform(cs, "u_source_static", int(c.source_static))
    cs.run(c.n_groups)
