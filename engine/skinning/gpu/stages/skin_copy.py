"""Fused skin + copy stage (plan fusion of an LBS/DQS bind-mode skin and its only copy): one dispatch over the
display pool that skins each display vertex straight into the display outputs.

It reads three read-only images (why images: engine.skinning.gpu.layouts, "fused skin_copy stage"): a
SkinVertex per display vertex (static), a SkinHead per display work group and the batch's joints as compact
records of the node's method (written once per frame by the pose upload).
"""
from __future__ import annotations

from dataclasses import dataclass

import moderngl

from engine.skinning.gpu import layouts as L
from engine.skinning.gpu.stages.base import StageContext, bind_image, bind_ssbo


@dataclass(frozen=True)
class SkinCopyContext(StageContext):
    """What one fused skin_copy dispatch needs."""

    vertices: moderngl.Texture            # SkinVertex per display vertex (static pool)
    joints: moderngl.Texture              # SkinJointLbs / SkinJointDqs per joint of the batch
    heads: moderngl.Texture               # SkinHead per display work group
    target: moderngl.Buffer               # display positions
    normals: moderngl.Buffer | None       # display normals (skinned bind normals), if the node writes them
    n_groups: int                         # display work groups


def run(c: SkinCopyContext) -> None:
    """One dispatch over the display pool."""
    method = c.node.options.get("method", "lbs")
    cs = c.program("skin_copy", {"METHOD": L.METHOD_IDS[method], "SKINNED_NORMALS": int(c.normals is not None)})
    bind_image(c.vertices, "I_SKIN_VERTS")
    bind_image(c.joints, "I_SKIN_JOINTS")
    bind_image(c.heads, "I_SKIN_HEADS")
    bind_ssbo(c.target, "B_DST")
    if c.normals is not None:
        bind_ssbo(c.normals, "B_DST_NORMALS")
    cs.run(c.n_groups)
