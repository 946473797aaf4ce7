"""Vertex normal stage (display domain): each display vertex sums the normals of the triangles around it (its
own display triangles, or those around its control point where the crease angle allows), one dispatch over the
display pool. Reference: engine.skinning.meshprep (vertex_normals).
"""
from __future__ import annotations

import math
from dataclasses import dataclass

import moderngl

from engine.skinning.gpu.stages.base import StageContext, bind_image, bind_ssbo, set_uniform


@dataclass(frozen=True)
class VertexNormalsContext(StageContext):
    """What one vertex normal dispatch needs."""

    heads: moderngl.Texture               # NormalsHead per display work group
    vertices: moderngl.Texture            # NormalVertex per display vertex (static pool)
    faces: moderngl.Texture               # NormalFaces texels: triangle lists (static pool)
    face_image: moderngl.Texture          # the face resource read, as an image
    target: moderngl.Buffer               # display normals
    n_groups: int                         # display work groups


def run(c: VertexNormalsContext) -> None:
    """One dispatch over the display pool."""
    cs = c.program("vertex_normals", None)
    bind_image(c.heads, "I_NORMALS_HEADS")
    bind_image(c.vertices, "I_NORMAL_VERTS")
    bind_image(c.faces, "I_NORMAL_FACES")
    bind_image(c.face_image, "I_FACE_IMAGE")
    bind_ssbo(c.target, "B_DST")
    crease = c.node.options.get("crease_angle")
    set_uniform(cs, "u_cos_crease", -4.0 if crease is None else math.cos(float(crease)) - 1e-9)
    cs.run(c.n_groups)
