"""Morph stage (control domain, before skinning): every instance's morph-target weights applied to its asset's
POSITION deltas, written as the instance's morphed bind positions (a control resource the skin reads instead of
the static bind pose); with skinned normals and NORMAL deltas, a second dispatch over the display pool writes
the morphed bind normals the copy stage transforms. Reference: engine.skinning.morph.

Why a stage of its own (and not inside skin / skin_copy): only assets with morph targets pay for it. The graph
inserts it (:func:`engine.skinning.gpu.plan.with_morph`) only into the graph of a mesh that has targets, so those
meshes form their own batch (the skin then reads a control resource, so the planner does not fuse skin + copy
for them), and every other mesh keeps the fused one-dispatch path and its shaders unchanged. The morphed
positions are per instance (each character has its own weights), which is what the control pool holds.
"""
from __future__ import annotations

from dataclasses import dataclass

import moderngl

from engine.skinning.gpu.stages.base import StageContext, bind_all


@dataclass(frozen=True)
class MorphNormals:
    """The normal dispatch: static bind normals in, morphed bind normals (display pool) out."""

    bind_normals: moderngl.Buffer
    groups: moderngl.Buffer               # display group table
    target: moderngl.Buffer
    n_groups: int


@dataclass(frozen=True)
class MorphContext(StageContext):
    """What the morph dispatches need."""

    instances: moderngl.Buffer            # DeformInstance table
    groups: moderngl.Buffer               # control group table
    bind: moderngl.Buffer                 # static bind positions
    target: moderngl.Buffer               # morphed bind positions (control pool)
    deltas: moderngl.Buffer               # vec4 rows, per asset target-major (positions, then normals)
    table: moderngl.Buffer                # ivec4 per instance (see shaders/deform/morph.comp)
    weights: moderngl.Buffer              # float per instance and target
    normals: MorphNormals | None
    n_groups: int


def run(c: MorphContext) -> None:
    """One dispatch over the control pool (and one over the display pool for normals)."""
    cs = c.program("morph", {"MORPH_NORMALS": 0})
    bind_all(((c.instances, "B_INSTANCES"), (c.groups, "B_GROUPS"), (c.bind, "B_SRC"), (c.target, "B_DST"),
              (c.deltas, "B_MORPH_DELTAS"), (c.table, "B_MORPH_TABLE"), (c.weights, "B_MORPH_WEIGHTS")))
    cs.run(c.n_groups)
    if c.normals is not None:
        cs = c.program("morph", {"MORPH_NORMALS": 1})
        bind_all(((c.normals.groups, "B_GROUPS"), (c.normals.bind_normals, "B_SRC"),
                  (c.normals.target, "B_DST")))
        cs.run(c.normals.n_groups)
