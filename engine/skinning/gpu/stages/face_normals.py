"""Face normal stage (face domain): the normal of every display triangle of a batch from the deformed display
positions, one dispatch over the face pool. Writes the face resource both as an SSBO (its value, read back by
tests) and as an image (what the vertex normal stage gathers from). Reference: engine.skinning.meshprep.
"""
from __future__ import annotations

from dataclasses import dataclass

import moderngl

from engine.skinning.gpu.stages.base import StageContext, bind_image, bind_ssbo


@dataclass(frozen=True)
class FaceNormalsContext(StageContext):
    """What one face normal dispatch needs."""

    heads: moderngl.Texture               # NormalsHead per face work group
    triangles: moderngl.Texture           # NormalTri per display triangle (static pool)
    positions: moderngl.Buffer            # display positions
    target: moderngl.Buffer               # face pool SSBO
    target_image: moderngl.Texture        # the same values as an image
    n_groups: int                         # face work groups


def run(c: FaceNormalsContext) -> None:
    """One dispatch over the face pool."""
    cs = c.program("face_normals", None)
    bind_image(c.heads, "I_NORMALS_HEADS")
    bind_image(c.triangles, "I_NORMAL_TRIS")
    bind_image(c.target_image, "I_FACE_IMAGE", read=False, write=True)
    bind_ssbo(c.positions, "B_SRC")
    bind_ssbo(c.target, "B_FACES")
    cs.run(c.n_groups)
